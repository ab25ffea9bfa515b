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
  if (at_end_) return false;
  char buf[1 << 14];
  for (;;) {
    const char* got = gzgets(file_, buf, sizeof(buf));
    if (!got) break;
    line.append(got);
    if (line.back() == '\n') {
      line.pop_back();
      if (!line.empty() && line.back() == '\r') line.pop_back();
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
  if (line.back() == '\r') line.pop_back();  // last line without a newline
  ++lines_read_;
  return true;
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
