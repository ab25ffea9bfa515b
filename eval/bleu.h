#pragma once
// Corpus BLEU exactly as sacreBLEU 2.x computes it with its defaults: the 13a tokenizer,
// mixed case, exponential smoothing, n-grams up to 4, one reference per segment.
// No LibTorch here: this file can be tested and reused on its own.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace nmt::eval {

// The sacreBLEU version whose behaviour this reproduces (checked by tests/bleu_*).
inline constexpr const char* kSacreBleuVersion = "2.6.0";

// sacreBLEU's Tokenizer13a (mteval-v13a): entity unescaping, punctuation split off, dash
// after a digit split, whitespace (Python's str.split, i.e. Unicode) folded to one space.
std::string tokenize_13a(const std::string& line);

struct BleuStats {
  std::array<int64_t, 4> correct{}, total{};
  int64_t sys_len = 0, ref_len = 0;
  void add(const std::string& hypothesis, const std::string& reference);  // raw (untokenized) segments
  BleuStats& operator+=(const BleuStats& o);
};

struct BleuScore {
  double score = 0, bp = 0, ratio = 0;
  std::array<double, 4> precisions{};
  int64_t sys_len = 0, ref_len = 0;
  // Python's str(BLEUScore): "BLEU = 48.89 85.7/66.7/40.0/25.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)"
  std::string to_string() const;
};

BleuScore compute_bleu(const BleuStats& stats);
// Throws std::invalid_argument when the two lists differ in length.
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);
// "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
std::string bleu_signature();

}  // namespace nmt::eval
