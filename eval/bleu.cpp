#include "eval/bleu.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace nmt::eval {
namespace {

// Decodes one UTF-8 code point at s[i] (advancing i); invalid bytes decode as themselves,
// as Python's surrogateescape would keep them distinct from whitespace.
uint32_t next_code_point(const std::string& s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
  if (i + len > s.size()) len = 1;
  uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

// Python's str.isspace(), which str.split() and str.rstrip() use.
bool is_python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's str.split() with no arguments.
std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::string cur;
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    if (is_python_space(next_code_point(s, i))) {
      if (!cur.empty()) words.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.append(s, start, i - start);
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

// Python's str.rstrip() with no arguments.
std::string rstrip(const std::string& s) {
  size_t end = 0;
  for (size_t i = 0; i < s.size();) {
    if (!is_python_space(next_code_point(s, i))) end = i;
  }
  return s.substr(0, end);
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// [\{-\~\[-\` -\&\(-\+\:-\@\/]
bool is_13a_symbol(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') || (c >= '(' && c <= '+') ||
         (c >= ':' && c <= '@') || c == '/';
}

// One pass of re.sub with a two-character pattern: leftmost, non-overlapping matches,
// scanning on after each match, exactly as Python does. Patterns only involve ASCII, so
// working on UTF-8 bytes gives the same text as Python working on code points.
template <typename Match, typename Emit>
std::string sub2(const std::string& s, Match match, Emit emit) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && match(s[i], s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

std::map<std::vector<std::string>, int64_t> ngram_counts(const std::vector<std::string>& w) {
  std::map<std::vector<std::string>, int64_t> c;
  for (size_t n = 1; n <= 4; ++n)
    for (size_t i = 0; i + n <= w.size(); ++i) ++c[std::vector<std::string>(w.begin() + i, w.begin() + i + n)];
  return c;
}

}  // namespace

std::string tokenize_13a(const std::string& input) {
  std::string line = input;
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
  }
  line = " " + line + " ";
  std::string a;
  for (char c : line) {
    if (is_13a_symbol(c)) {
      a += ' ';
      a += c;
      a += ' ';
    } else {
      a += c;
    }
  }
  // period and comma unless preceded by a digit: ([^0-9])([\.,]) -> "\1 \2 "
  a = sub2(a, [](char x, char y) { return !is_digit(x) && (y == '.' || y == ','); },
           [](std::string& o, char x, char y) { o += x; o += ' '; o += y; o += ' '; });
  // period and comma unless followed by a digit: ([\.,])([^0-9]) -> " \1 \2"
  a = sub2(a, [](char x, char y) { return (x == '.' || x == ',') && !is_digit(y); },
           [](std::string& o, char x, char y) { o += ' '; o += x; o += ' '; o += y; });
  // dash after a digit: ([0-9])(-) -> "\1 \2 "
  a = sub2(a, [](char x, char y) { return is_digit(x) && y == '-'; },
           [](std::string& o, char x, char y) { o += x; o += ' '; o += y; o += ' '; });
  std::string out;
  for (const auto& w : split_words(a)) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

void BleuStats::add(const std::string& hypothesis, const std::string& reference) {
  const auto hyp = split_words(tokenize_13a(rstrip(hypothesis)));
  const auto ref = split_words(tokenize_13a(rstrip(reference)));
  const auto hc = ngram_counts(hyp), rc = ngram_counts(ref);
  for (const auto& [ngram, count] : hc) {
    const size_t n = ngram.size() - 1;
    total[n] += count;
    auto it = rc.find(ngram);
    if (it != rc.end()) correct[n] += std::min(count, it->second);
  }
  sys_len += static_cast<int64_t>(hyp.size());
  ref_len += static_cast<int64_t>(ref.size());
}

BleuStats& BleuStats::operator+=(const BleuStats& o) {
  for (int n = 0; n < 4; ++n) {
    correct[n] += o.correct[n];
    total[n] += o.total[n];
  }
  sys_len += o.sys_len;
  ref_len += o.ref_len;
  return *this;
}

BleuScore compute_bleu(const BleuStats& s) {
  BleuScore r;
  r.sys_len = s.sys_len;
  r.ref_len = s.ref_len;
  r.ratio = s.ref_len ? static_cast<double>(s.sys_len) / static_cast<double>(s.ref_len) : 0.0;
  r.bp = 1.0;
  if (s.sys_len < s.ref_len) r.bp = s.sys_len > 0 ? std::exp(1.0 - static_cast<double>(s.ref_len) / s.sys_len) : 0.0;
  bool any = false;
  for (int64_t c : s.correct) any |= c != 0;
  if (!any) return r;  // score 0, precisions 0
  double smooth = 1.0;
  for (int n = 0; n < 4; ++n) {
    if (s.total[n] == 0) break;
    if (s.correct[n] == 0) {
      smooth *= 2;  // 'exp' smoothing (mteval-v13a's NIST method)
      r.precisions[n] = 100.0 / (smooth * static_cast<double>(s.total[n]));
    } else {
      r.precisions[n] = 100.0 * static_cast<double>(s.correct[n]) / static_cast<double>(s.total[n]);
    }
  }
  double log_sum = 0;
  for (double p : r.precisions) log_sum += p == 0 ? -9999999999.0 : std::log(p);
  r.score = r.bp * std::exp(log_sum / 4);
  return r;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references) {
  if (hypotheses.size() != references.size())
    throw std::invalid_argument("BLEU needs one hypothesis per reference: got " + std::to_string(hypotheses.size()) +
                                " hypotheses and " + std::to_string(references.size()) + " references");
  BleuStats s;
  for (size_t i = 0; i < hypotheses.size(); ++i) s.add(hypotheses[i], references[i]);
  return compute_bleu(s);
}

std::string BleuScore::to_string() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld ref_len = %lld)",
                score, precisions[0], precisions[1], precisions[2], precisions[3], bp, ratio,
                static_cast<long long>(sys_len), static_cast<long long>(ref_len));
  return buf;
}

std::string bleu_signature() { return std::string("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:") + kSacreBleuVersion; }

}  // namespace nmt::eval
