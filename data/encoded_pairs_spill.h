#pragma once
// A split's encoded pairs on disk, written once in order and read back once in order. preprocess
// keeps its memory to a block of lines and a shard this way: a shard's range is known only once
// the whole split is encoded (pairs that are too long are dropped), so the ids wait on disk, not
// in memory. Layout, native-endian: per pair, int32 source length, int32 target length, then
// the source ids and the target ids (int32).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "data/shard_io.h"

namespace nmt::data {

class EncodedPairsWriter {
 public:
  // Creates (truncates) `path`. Throws DataError naming it.
  explicit EncodedPairsWriter(std::string path);
  ~EncodedPairsWriter();
  EncodedPairsWriter(const EncodedPairsWriter&) = delete;
  EncodedPairsWriter& operator=(const EncodedPairsWriter&) = delete;

  void append(const std::vector<int>& src, const std::vector<int>& tgt);
  int64_t pairs() const { return pairs_; }
  // Flushes and closes; throws DataError naming the file when a write failed (a full disk).
  void close();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  int64_t pairs_ = 0;
};

class EncodedPairsReader {
 public:
  explicit EncodedPairsReader(std::string path);
  ~EncodedPairsReader();
  EncodedPairsReader(const EncodedPairsReader&) = delete;
  EncodedPairsReader& operator=(const EncodedPairsReader&) = delete;

  // Appends the next `n` pairs to `src` and `tgt`. Throws DataError when the file ends first.
  void read(int64_t n, FlatIds& src, FlatIds& tgt);

 private:
  void read_ids(int32_t count, FlatIds& side);
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace nmt::data
