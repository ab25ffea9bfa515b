#pragma once
// Reading and writing one HDF5 shard (format: shard_format.h).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nmt::data {

// The ids of one side of a set of examples, flat with offsets (size n + 1, starting at 0).
struct FlatIds {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  void push_back(const std::vector<int>& ids) {
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
};

struct ShardHeader {
  int64_t format_version = 0;
  std::string split;
  int64_t shard_index = 0;
  int64_t num_shards = 0;
  int64_t num_examples = 0;
  int64_t vocab_size = 0;
  std::string spm_sha256;
};

// Writes a shard so that equal inputs give byte-identical files. Throws DataError.
void write_shard(const std::string& path, const ShardHeader& header, const FlatIds& src, const FlatIds& tgt);

// An open shard: header and both offset arrays are read and validated on open; token
// ids are read on demand, one example at a time, so a rank reads only what it uses (or whole,
// after preload(), for a corpus that fits data.preload_mb). The offsets are not kept (16 bytes an example: 72 MB at WMT14's 4.5M pairs): an example's two
// offsets are read with its ids.
class ShardReader {
 public:
  // Throws DataError naming `path` and the field when the file is not a valid shard. Appends
  // each example's source and target lengths (ids, without BOS/EOS) to the vectors given.
  explicit ShardReader(const std::string& path, std::vector<int32_t>* src_lengths = nullptr,
                       std::vector<int32_t>* tgt_lengths = nullptr);
  ~ShardReader();
  ShardReader(ShardReader&&) noexcept;
  ShardReader& operator=(ShardReader&&) noexcept;

  const std::string& path() const { return path_; }
  const ShardHeader& header() const { return header_; }

  // Appends the ids of example `i` (0-based within this shard) to `src` / `tgt`; checks
  // each id is in [0, vocab_size). Adds the bytes read to token_bytes_read().
  void read_example(int64_t i, std::vector<int32_t>* src, std::vector<int32_t>* tgt);
  int64_t token_bytes_read() const { return token_bytes_read_; }

  // Reads the shard's offsets and ids whole into memory, checking every id against the
  // vocabulary (naming the first example that fails): read_example then copies from memory
  // instead of making four HDF5 reads an example (about 10-20 us, most of a GPU update's data
  // phase). The ids' bytes count in token_bytes_read() once, here.
  void preload();
  // The bytes preload() holds: both sides' offsets and ids.
  int64_t preload_bytes() const;

 private:
  struct Handles;
  std::string path_;
  ShardHeader header_;
  int64_t src_ids_ = 0, tgt_ids_ = 0;  // length of /src/tokens, /tgt/tokens
  std::unique_ptr<Handles> h_;
  int64_t token_bytes_read_ = 0;
  bool preloaded_ = false;
  FlatIds src_mem_, tgt_mem_;  // after preload()
};

}  // namespace nmt::data
