#pragma once
// The on-disk contract of preprocessed data (docs/ARCHITECTURE.md, "Contracts": shards). Anyone can read it,
// h5py included:
//
//   {shard_dir}/manifest.json                    the index; see manifest.h
//   {shard_dir}/spm.model                        the joint SentencePiece model
//   {shard_dir}/{split}-{i:05d}-of-{n:05d}.h5    one HDF5 file per shard:
//       /src/tokens   int32  [total source pieces]   flat ids, no BOS/EOS (batching adds them)
//       /src/offsets  int64  [examples + 1]          example i is tokens[offsets[i]:offsets[i+1]]
//       /tgt/tokens   int32  [total target pieces]
//       /tgt/offsets  int64  [examples + 1]
//     root attributes:
//       format_version int64 (kShardFormatVersion), split string, shard_index int64,
//       num_shards int64, num_examples int64, vocab_size int64, spm_sha256 string
//
// Datasets are contiguous (unchunked, uncompressed) so that a reader can fetch exactly
// one example's ids, and are written without object timestamps so that the same input
// gives the same bytes.
#include <cstdint>
#include <string>

namespace nmt::data {

inline constexpr int64_t kShardFormatVersion = 1;
inline constexpr int64_t kManifestFormatVersion = 1;
inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kSpmModelName = "spm.model";

std::string shard_file_name(const std::string& split, int64_t index, int64_t count);

// Special ids of the joint vocabulary; preprocess trains SentencePiece with these.
struct SpecialIds {
  int64_t pad = 0;
  int64_t unk = 1;
  int64_t bos = 2;
  int64_t eos = 3;
};

}  // namespace nmt::data
