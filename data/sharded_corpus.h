#pragma once
// One split of a shard directory, or several concatenated (the training corpora of
// data.train_corpora), as the trainer sees it: every example's lengths up front (for
// planning), token ids read on demand (so each rank reads only its own).
#include <cstdint>
#include <string>
#include <vector>

#include "data/manifest.h"
#include "data/shard_io.h"

namespace nmt::data {

class ShardedCorpus {
 public:
  // Validates the manifest, the SentencePiece model's checksum, every shard's checksum
  // (before HDF5 opens it), and every shard's header and offsets against the manifest.
  // Throws DataError naming file and field.
  ShardedCorpus(const std::string& shard_dir, const std::string& split);
  // The splits' examples one after another, in the order given: split k holds the global
  // indices [split_begin()[k], split_begin()[k + 1]).
  ShardedCorpus(const std::string& shard_dir, const std::vector<std::string>& splits);

  const Manifest& manifest() const { return manifest_; }
  const std::vector<std::string>& splits() const { return splits_; }
  // The split's name, or the splits' names joined by "+", for messages.
  std::string split() const;
  const std::vector<int64_t>& split_begin() const { return split_begin_; }
  // The split (index into splits()) that example `i` belongs to.
  int64_t split_of(int64_t example) const;
  // The decoder's first token for example `i`: its split's language tag under data.lang_tag:
  // decoder (data/manifest.h, SplitEntry::decoder_start), else -1 (BOS).
  int64_t decoder_start(int64_t example) const;
  int64_t size() const { return static_cast<int64_t>(src_len_.size()); }
  // Lengths in pieces, without BOS/EOS. Index = global example index (shard order).
  const std::vector<int32_t>& src_lengths() const { return src_len_; }
  const std::vector<int32_t>& tgt_lengths() const { return tgt_len_; }

  // Replaces *src / *tgt with the ids of example `i`.
  void read(int64_t i, std::vector<int32_t>* src, std::vector<int32_t>* tgt);
  // Token bytes read from shard files so far (checksums not included).
  int64_t token_bytes_read() const;
  // Reads every shard whole into memory (ShardReader::preload) when they hold at most
  // `max_bytes` together, so that read() copies from memory; returns the bytes held then, and
  // 0 (reading per example, as before) when they hold more.
  int64_t preload_within(int64_t max_bytes);
  // The bytes the shards would hold in memory (both sides' offsets and ids).
  int64_t preload_bytes() const;

 private:
  void open_split(const std::string& split);

  std::string dir_;
  std::vector<std::string> splits_;
  std::vector<int64_t> split_begin_{0};
  std::vector<int64_t> split_decoder_start_;  // per split
  Manifest manifest_;
  std::vector<ShardReader> shards_;
  std::vector<int64_t> shard_begin_;  // global index of each shard's first example, plus the total
  std::vector<int32_t> src_len_, tgt_len_;
};

}  // namespace nmt::data
