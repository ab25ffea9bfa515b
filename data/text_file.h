#pragma once
// Line-oriented text input, plain or gzip-compressed (zlib reads both transparently).
#include <string>
#include <vector>

namespace nmt::data {

// All lines of `path` without their line terminators ("\n" or "\r\n").
// Throws DataError naming the file when it cannot be opened or read.
std::vector<std::string> read_lines(const std::string& path);

// `{dir}/{split}.{lang}` if it exists, else `{dir}/{split}.{lang}.gz`, else "".
std::string find_split_file(const std::string& dir, const std::string& split, const std::string& lang);

// Split prefixes in `dir` that have a file for either language, sorted.
std::vector<std::string> list_splits(const std::string& dir, const std::string& src_lang,
                                     const std::string& tgt_lang);

}  // namespace nmt::data
