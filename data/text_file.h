#pragma once
// Line-oriented text input, plain or gzip-compressed (zlib reads both transparently).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct gzFile_s;

namespace nmt::data {

// Reads `path` one line at a time, so that a corpus of any size is read in constant memory.
// Lines come without their terminators ("\n" or "\r\n"); a last line without a newline counts.
class LineReader {
 public:
  // Throws DataError naming the file when it cannot be opened.
  explicit LineReader(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line into `line`; false at the end. Throws DataError naming the file and the
  // line number on a read error (a truncated or corrupt gzip stream included).
  bool next(std::string& line);
  const std::string& path() const { return path_; }
  int64_t lines_read() const { return lines_read_; }
  // Whether the line next() returned last ended in "\r\n" (or, the file's last, in "\r"):
  // for callers that refuse Windows line endings instead of taking them as "\n".
  bool last_ended_in_cr() const { return last_ended_in_cr_; }

 private:
  std::string path_;
  gzFile_s* file_ = nullptr;
  int64_t lines_read_ = 0;
  bool at_end_ = false;
  bool last_ended_in_cr_ = false;
};

// The byte offset (0-based) of the first byte of `text` that does not belong to a valid UTF-8
// sequence (overlong forms, surrogates and code points above U+10FFFF are invalid), or -1.
int64_t first_invalid_utf8(const std::string& text);

// All lines of `path` (LineReader's rules). Throws DataError naming the file.
std::vector<std::string> read_lines(const std::string& path);

// The number of lines of `path`, read through once (LineReader's rules).
int64_t count_lines(const std::string& path);

// `{dir}/{split}.{lang}` if it exists, else `{dir}/{split}.{lang}.gz`, else "".
std::string find_split_file(const std::string& dir, const std::string& split, const std::string& lang);

// Split prefixes in `dir` that have a file for either language, sorted.
std::vector<std::string> list_splits(const std::string& dir, const std::string& src_lang,
                                     const std::string& tgt_lang);

}  // namespace nmt::data
