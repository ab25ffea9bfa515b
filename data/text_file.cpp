#include "data/text_file.h"

#include <zlib.h>

#include <filesystem>
#include <set>

#include "data/data_error.h"

namespace fs = std::filesystem;

namespace nmt::data {

LineReader::LineReader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
  if (!file_) throw DataError(path + ": cannot open");
  gzbuffer(file_, 1 << 17);
}

LineReader::~LineReader() {
  if (file_) gzclose(file_);
}

bool LineReader::next(std::string& line) {
  line.clear();
  last_ended_in_cr_ = false;
  if (at_end_) return false;
  char buf[1 << 14];
  for (;;) {
    const char* got = gzgets(file_, buf, sizeof(buf));
    if (!got) break;
    line.append(got);
    if (line.back() == '\n') {
      line.pop_back();
      last_ended_in_cr_ = !line.empty() && line.back() == '\r';
      if (last_ended_in_cr_) line.pop_back();
      ++lines_read_;
      return true;
    }
  }
  int err = 0;
  const char* msg = gzerror(file_, &err);
  if (err != Z_OK && err != Z_STREAM_END)
    throw DataError(path_ + ": read error after line " + std::to_string(lines_read_) + ": " + msg);
  at_end_ = true;
  if (line.empty()) return false;
  last_ended_in_cr_ = line.back() == '\r';
  if (last_ended_in_cr_) line.pop_back();  // last line without a newline
  ++lines_read_;
  return true;
}

int64_t first_invalid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    size_t len;
    uint32_t cp;
    if (b < 0x80) { ++i; continue; }
    if ((b & 0xE0) == 0xC0) { len = 2; cp = b & 0x1F; }
    else if ((b & 0xF0) == 0xE0) { len = 3; cp = b & 0x0F; }
    else if ((b & 0xF8) == 0xF0) { len = 4; cp = b & 0x07; }
    else return static_cast<int64_t>(i);
    if (i + len > n) return static_cast<int64_t>(i);
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return static_cast<int64_t>(i);
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    static constexpr uint32_t kSmallest[5] = {0, 0, 0x80, 0x800, 0x10000};  // shorter forms are overlong
    if (cp < kSmallest[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return static_cast<int64_t>(i);
    i += len;
  }
  return -1;
}

std::vector<std::string> read_lines(const std::string& path) {
  LineReader reader(path);
  std::vector<std::string> lines;
  std::string line;
  while (reader.next(line)) lines.push_back(line);
  return lines;
}

int64_t count_lines(const std::string& path) {
  LineReader reader(path);
  std::string line;
  while (reader.next(line)) {
  }
  return reader.lines_read();
}

std::string find_split_file(const std::string& dir, const std::string& split, const std::string& lang) {
  for (const std::string& suffix : {std::string(), std::string(".gz")}) {
    fs::path p = fs::path(dir) / (split + "." + lang + suffix);
    if (fs::is_regular_file(p)) return p.string();
  }
  return "";
}

std::vector<std::string> list_splits(const std::string& dir, const std::string& src_lang,
                                     const std::string& tgt_lang) {
  if (!fs::is_directory(dir)) throw DataError(dir + ": raw data directory does not exist");
  std::set<std::string> prefixes;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
    for (const std::string& lang : {src_lang, tgt_lang}) {
      const std::string suffix = "." + lang;
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        prefixes.insert(name.substr(0, name.size() - suffix.size()));
    }
  }
  return {prefixes.begin(), prefixes.end()};
}

}  // namespace nmt::data
