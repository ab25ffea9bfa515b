#include "data/sharded_corpus.h"

#include <algorithm>
#include <filesystem>

#include "base/sha256.h"
#include "data/data_error.h"

namespace fs = std::filesystem;

namespace nmt::data {
namespace {

// What to do about a missing split that preprocess derives from a training corpus under an
// option (data/data_config.h's names), or "" for any other split.
std::string derived_split_hint(const std::string& split) {
  const auto ends_with = [&](const std::string& tail) {
    return split.size() > tail.size() && split.compare(split.size() - tail.size(), tail.size(), tail) == 0;
  };
  std::string option;
  if (ends_with(".concat")) option = "data.concat_weight";
  if (ends_with(".reversed")) option = "data.reversed_weight";
  const size_t dot = split.rfind(".sample");
  if (dot != std::string::npos && dot + 7 < split.size() &&
      split.find_first_not_of("0123456789", dot + 7) == std::string::npos)
    option = "data.subword_samples";
  if (option.empty()) return "";
  return "; preprocess writes it under " + option + ": run preprocess again with the training run's data settings";
}

}  // namespace

ShardedCorpus::ShardedCorpus(const std::string& shard_dir, const std::string& split)
    : ShardedCorpus(shard_dir, std::vector<std::string>{split}) {}

ShardedCorpus::ShardedCorpus(const std::string& shard_dir, const std::vector<std::string>& splits)
    : dir_(shard_dir), manifest_(Manifest::load(shard_dir)) {
  const std::string spm_path = (fs::path(dir_) / manifest_.spm_model).string();
  if (!fs::exists(spm_path)) throw DataError(spm_path + ": SentencePiece model named by the manifest is missing");
  if (manifest_.vocabulary_sha256(dir_) != manifest_.spm_sha256)
    throw DataError(spm_path + (manifest_.vocab_json.empty() ? "" : " (with its target model and vocab.json)") +
                    ": checksum differs from the manifest's field 'spm_sha256'");
  shard_begin_.push_back(0);
  // Reserved from the manifest: grown by doubling, a 4.5M-pair corpus left ~2x its lengths
  // resident in freed blocks (freed memory stays mapped: runtime/malloc_tuning.h). Only a
  // plausible count is trusted here; the shards' own headers are checked against it below.
  size_t examples = 0;
  for (const std::string& split : splits)
    if (auto it = manifest_.splits.find(split); it != manifest_.splits.end() && it->second.examples > 0)
      examples += static_cast<size_t>(it->second.examples);
  if (examples <= (size_t{1} << 32)) {
    src_len_.reserve(examples);
    tgt_len_.reserve(examples);
  }
  for (const std::string& split : splits) open_split(split);
}

void ShardedCorpus::open_split(const std::string& split) {
  const std::string manifest_path = (fs::path(dir_) / kManifestName).string();
  auto it = manifest_.splits.find(split);
  if (it == manifest_.splits.end())
    throw DataError(manifest_path + ": no split '" + split + "' (field 'splits')" + derived_split_hint(split));
  const SplitEntry& entry = it->second;
  for (size_t k = 0; k < entry.shards.size(); ++k) {
    const ShardEntry& se = entry.shards[k];
    const std::string path = (fs::path(dir_) / se.file).string();
    if (!fs::exists(path)) throw DataError(path + ": shard listed in " + manifest_path + " is missing");
    // The checksum first: a damaged file never reaches HDF5's parser, whose bugs on
    // malformed input (heap overflows in libhdf5 1.10, found by tests/fuzz_readers.cpp)
    // would otherwise crash the job instead of naming the file. Costs one read of each
    // shard per rank at start (page cache shared by a host's ranks; ~1 GB/s for SHA-256).
    if (base::sha256_file(path) != se.sha256)
      throw DataError(path + ": checksum differs from the manifest's field 'splits." + split + ".shards[" +
                      std::to_string(k) + "].sha256' (corrupt shard)");
    std::vector<int32_t> src_len, tgt_len;  // appended below once the header checks pass
    ShardReader r(path, &src_len, &tgt_len);
    const ShardHeader& h = r.header();
    auto mismatch = [&](const std::string& field, const std::string& got, const std::string& want) {
      return DataError(path + ": field '" + field + "' is " + got + " but the manifest says " + want);
    };
    if (h.split != split) throw mismatch("split", h.split, split);
    if (h.shard_index != static_cast<int64_t>(k)) throw mismatch("shard_index", std::to_string(h.shard_index), std::to_string(k));
    if (h.num_shards != static_cast<int64_t>(entry.shards.size()))
      throw mismatch("num_shards", std::to_string(h.num_shards), std::to_string(entry.shards.size()));
    if (h.num_examples != se.examples) throw mismatch("num_examples", std::to_string(h.num_examples), std::to_string(se.examples));
    if (h.vocab_size != manifest_.vocab_size)
      throw mismatch("vocab_size", std::to_string(h.vocab_size), std::to_string(manifest_.vocab_size));
    if (h.spm_sha256 != manifest_.spm_sha256)
      throw mismatch("spm_sha256", h.spm_sha256, manifest_.spm_sha256 + " (vocabulary mismatch)");
    src_len_.insert(src_len_.end(), src_len.begin(), src_len.end());
    tgt_len_.insert(tgt_len_.end(), tgt_len.begin(), tgt_len.end());
    shard_begin_.push_back(shard_begin_.back() + h.num_examples);
    shards_.push_back(std::move(r));
  }
  splits_.push_back(split);
  split_begin_.push_back(shard_begin_.back());
  split_decoder_start_.push_back(entry.decoder_start);
}

int64_t ShardedCorpus::split_of(int64_t example) const {
  const auto it = std::upper_bound(split_begin_.begin(), split_begin_.end(), example);
  return static_cast<int64_t>(it - split_begin_.begin()) - 1;
}

int64_t ShardedCorpus::decoder_start(int64_t example) const {
  return split_decoder_start_[static_cast<size_t>(split_of(example))];
}

std::string ShardedCorpus::split() const {
  std::string names;
  for (const std::string& s : splits_) names += (names.empty() ? "" : "+") + s;
  return names;
}

void ShardedCorpus::read(int64_t i, std::vector<int32_t>* src, std::vector<int32_t>* tgt) {
  if (i < 0 || i >= size()) throw DataError(dir_ + ": example " + std::to_string(i) + " out of range");
  const size_t k = std::upper_bound(shard_begin_.begin(), shard_begin_.end(), i) - shard_begin_.begin() - 1;
  src->clear();
  tgt->clear();
  shards_[k].read_example(i - shard_begin_[k], src, tgt);
}

int64_t ShardedCorpus::token_bytes_read() const {
  int64_t n = 0;
  for (const auto& s : shards_) n += s.token_bytes_read();
  return n;
}

int64_t ShardedCorpus::preload_bytes() const {
  int64_t n = 0;
  for (const auto& s : shards_) n += s.preload_bytes();
  return n;
}

int64_t ShardedCorpus::preload_within(int64_t max_bytes) {
  const int64_t n = preload_bytes();
  if (n > max_bytes) return 0;
  for (auto& s : shards_) s.preload();
  return n;
}

}  // namespace nmt::data
