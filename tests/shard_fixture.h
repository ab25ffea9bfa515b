#pragma once
// Writes small shard directories with known ids, for reader and planner tests.
#include <filesystem>
#include <random>
#include <vector>

#include "base/sha256.h"
#include "data/manifest.h"
#include "data/shard_io.h"
#include "tests/test_util.h"

namespace nmt::testing {

struct Pair {
  std::vector<int> src, tgt;
};

// `n` pairs with lengths 1..max_len and ids in [4, vocab), from a fixed seed.
inline std::vector<Pair> random_pairs(int n, int max_len, int vocab, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::vector<Pair> out(n);
  for (auto& p : out) {
    const int ls = 1 + static_cast<int>(rng() % max_len), lt = 1 + static_cast<int>(rng() % max_len);
    for (int i = 0; i < ls; ++i) p.src.push_back(4 + static_cast<int>(rng() % (vocab - 4)));
    for (int i = 0; i < lt; ++i) p.tgt.push_back(4 + static_cast<int>(rng() % (vocab - 4)));
  }
  return out;
}

// Writes `pairs` as split `split` in `num_shards` shards plus spm.model and manifest.json.
inline data::Manifest write_shard_dir(const std::filesystem::path& dir, const std::vector<Pair>& pairs,
                                      int num_shards, int vocab, const std::string& split = "train") {
  std::filesystem::create_directories(dir);
  const std::string spm_bytes = "not a real SentencePiece model, only checksummed";
  write_text((dir / data::kSpmModelName).string(), spm_bytes);
  data::Manifest m;
  m.src_lang = "de";
  m.tgt_lang = "en";
  m.spm_sha256 = base::sha256_hex(spm_bytes);
  m.vocab_size = vocab;
  data::SplitEntry entry;
  const int64_t n = static_cast<int64_t>(pairs.size());
  for (int k = 0; k < num_shards; ++k) {
    const int64_t lo = n * k / num_shards, hi = n * (k + 1) / num_shards;
    data::FlatIds s, t;
    for (int64_t i = lo; i < hi; ++i) {
      s.push_back(pairs[i].src);
      t.push_back(pairs[i].tgt);
    }
    const std::string file = data::shard_file_name(split, k, num_shards);
    const std::string path = (dir / file).string();
    data::write_shard(path, {data::kShardFormatVersion, split, k, num_shards, hi - lo, vocab, m.spm_sha256}, s, t);
    entry.shards.push_back({file, hi - lo, base::sha256_file(path)});
  }
  entry.examples = entry.raw_lines = n;
  m.splits[split] = entry;
  write_text((dir / data::kManifestName).string(), m.to_json());
  return m;
}

}  // namespace nmt::testing
