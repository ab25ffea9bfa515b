// Shards: round trip, and every kind of damage refused with a message naming file and field.
#include <hdf5.h>

#include <fstream>

#include "base/sha256.h"
#include "data/data_error.h"
#include "data/manifest.h"
#include "data/sharded_corpus.h"
#include "tests/shard_fixture.h"

namespace nmt::data {
namespace {

using nmt::testing::random_pairs;
using nmt::testing::TempDir;
using nmt::testing::write_shard_dir;

constexpr int kVocab = 50;

void expect_reads_back(ShardedCorpus& corpus, const std::vector<nmt::testing::Pair>& pairs) {
  ASSERT_EQ(corpus.size(), static_cast<int64_t>(pairs.size()));
  std::vector<int32_t> s, t;
  for (size_t i = 0; i < pairs.size(); ++i) {
    corpus.read(static_cast<int64_t>(i), &s, &t);
    EXPECT_EQ(std::vector<int>(s.begin(), s.end()), pairs[i].src) << i;
    EXPECT_EQ(std::vector<int>(t.begin(), t.end()), pairs[i].tgt) << i;
    EXPECT_EQ(corpus.src_lengths()[i], static_cast<int32_t>(pairs[i].src.size()));
    EXPECT_EQ(corpus.tgt_lengths()[i], static_cast<int32_t>(pairs[i].tgt.size()));
  }
}

TEST(Shards, RoundTripEqualsInput) {
  TempDir dir;
  auto pairs = random_pairs(101, 9, kVocab);
  pairs[5].src.clear();  // empty sides survive in non-training splits
  write_shard_dir(dir.path(), pairs, 3, kVocab);
  ShardedCorpus corpus(dir.path().string(), "train");
  expect_reads_back(corpus, pairs);
}

TEST(Shards, PreloadedReadsEqualInputAndCountTheBytesOnce) {
  TempDir dir;
  auto pairs = random_pairs(101, 9, kVocab);
  pairs[5].src.clear();
  write_shard_dir(dir.path(), pairs, 3, kVocab);
  ShardedCorpus corpus(dir.path().string(), "train");
  int64_t ids = 0;
  for (const auto& p : pairs) ids += static_cast<int64_t>(p.src.size() + p.tgt.size());
  const int64_t bytes = 16 * (101 + 3) + 4 * ids;  // 3 shards: 2 offset arrays of n + 1 each, then the ids
  EXPECT_EQ(corpus.preload_bytes(), bytes);
  EXPECT_EQ(corpus.preload_within(bytes - 1), 0);  // over the budget: left on disk
  EXPECT_EQ(corpus.token_bytes_read(), 0);
  EXPECT_EQ(corpus.preload_within(bytes), bytes);
  EXPECT_EQ(corpus.token_bytes_read(), 4 * ids);
  expect_reads_back(corpus, pairs);
  EXPECT_EQ(corpus.token_bytes_read(), 4 * ids);  // reads from memory read no file
}

TEST(Shards, SameInputGivesSameBytes) {
  TempDir a, b;
  auto pairs = random_pairs(50, 7, kVocab);
  write_shard_dir(a.path(), pairs, 2, kVocab);
  write_shard_dir(b.path(), pairs, 2, kVocab);
  for (const auto& f : {"train-00000-of-00002.h5", "train-00001-of-00002.h5", "manifest.json"})
    EXPECT_EQ(nmt::testing::read_text(a.file(f)), nmt::testing::read_text(b.file(f))) << f;
}

TEST(Shards, MissingManifestOrSplit) {
  TempDir dir;
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "manifest.json");
  write_shard_dir(dir.path(), random_pairs(10, 5, kVocab), 1, kVocab);
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "valid"), DataError, "manifest.json", "'valid'");
}

TEST(Shards, MissingShard) {
  TempDir dir;
  write_shard_dir(dir.path(), random_pairs(10, 5, kVocab), 2, kVocab);
  std::filesystem::remove(dir.file("train-00001-of-00002.h5"));
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "train-00001-of-00002.h5", "missing");
}

TEST(Shards, TruncatedFile) {
  TempDir dir;
  write_shard_dir(dir.path(), random_pairs(40, 5, kVocab), 1, kVocab);
  const std::string path = dir.file("train-00000-of-00001.h5");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "train-00000-of-00001.h5");
}

TEST(Shards, FlippedByteFailsChecksumBeforeHdf5ParsesTheFile) {
  // One flipped bit in the data, one in HDF5's own structures (superblock, object
  // headers): both are named by the checksum before HDF5 reads a byte of the file.
  for (const bool in_header : {false, true}) {
    TempDir dir;
    write_shard_dir(dir.path(), random_pairs(40, 5, kVocab), 1, kVocab);
    const std::string path = dir.file("train-00000-of-00001.h5");
    std::string bytes = nmt::testing::read_text(path);
    bytes[in_header ? 100 : bytes.size() - 3] ^= 0x01;
    nmt::testing::write_text(path, bytes);
    EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "train-00000-of-00001.h5",
                      "splits.train.shards[0].sha256", "corrupt shard");
  }
}

// Records a shard's new checksum in the manifest, as a preprocess that wrote the shard
// this way would have: the reader's header checks are then what must refuse it.
void reseal(const std::filesystem::path& dir, const std::string& file) {
  const std::string manifest_path = (dir / "manifest.json").string();
  nmt::data::Manifest m = nmt::data::Manifest::load(dir.string());
  for (auto& [name, split] : m.splits)
    for (auto& shard : split.shards)
      if (shard.file == file) shard.sha256 = nmt::base::sha256_file((dir / file).string());
  nmt::testing::write_text(manifest_path, m.to_json());
}

// Rewrites one root attribute of a shard in place, keeping everything else.
void set_int_attr(const std::string& path, const char* name, int64_t value) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT64, &value);
  H5Aclose(a);
  H5Fclose(f);
}

TEST(Shards, WrongFormatVersion) {
  TempDir dir;
  write_shard_dir(dir.path(), random_pairs(10, 5, kVocab), 1, kVocab);
  set_int_attr(dir.file("train-00000-of-00001.h5"), "format_version", 99);
  reseal(dir.path(), "train-00000-of-00001.h5");
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "train-00000-of-00001.h5",
                    "format_version", "99");
}

TEST(Shards, VocabularyMismatch) {
  TempDir dir;
  write_shard_dir(dir.path(), random_pairs(10, 5, kVocab), 1, kVocab);
  set_int_attr(dir.file("train-00000-of-00001.h5"), "vocab_size", kVocab + 1);
  reseal(dir.path(), "train-00000-of-00001.h5");
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "train-00000-of-00001.h5", "vocab_size");
  // A different SentencePiece model than the one the shards were encoded with.
  TempDir other;
  write_shard_dir(other.path(), random_pairs(10, 5, kVocab), 1, kVocab);
  nmt::testing::write_text(other.file("spm.model"), "another model");
  EXPECT_THROW_WITH(ShardedCorpus(other.path().string(), "train"), DataError, "spm.model", "spm_sha256");
}

TEST(Shards, OutOfRangeTokenId) {
  TempDir dir;
  auto pairs = random_pairs(10, 5, kVocab);
  pairs[3].tgt[0] = kVocab + 7;
  write_shard_dir(dir.path(), pairs, 1, kVocab);
  ShardedCorpus corpus(dir.path().string(), "train");
  std::vector<int32_t> s, t;
  EXPECT_NO_THROW(corpus.read(2, &s, &t));
  EXPECT_THROW_WITH(corpus.read(3, &s, &t), DataError, "train-00000-of-00001.h5", "/tgt/tokens",
                    std::to_string(kVocab + 7), "example 3");
  // Read whole, the shard is refused at once, naming the same example.
  EXPECT_THROW_WITH(corpus.preload_within(1 << 20), DataError, "train-00000-of-00001.h5", "/tgt/tokens",
                    std::to_string(kVocab + 7), "example 3");
}

TEST(Shards, BadOffsetsAndManifestCounts) {
  TempDir dir;
  write_shard_dir(dir.path(), random_pairs(10, 5, kVocab), 1, kVocab);
  // The manifest claims more examples than the shard has.
  std::string m = nmt::testing::read_text(dir.file("manifest.json"));
  const auto at = m.find("\"examples\": 10");
  m.replace(at, 14, "\"examples\": 11");
  m.replace(m.find("\"examples\": 10"), 14, "\"examples\": 11");
  nmt::testing::write_text(dir.file("manifest.json"), m);
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "train-00000-of-00001.h5", "num_examples");
  // Decreasing offsets.
  TempDir bad;
  FlatIds s, t;
  s.tokens = {5, 6, 7};
  s.offsets = {0, 2, 1, 3};
  t.tokens = {5, 6, 7};
  t.offsets = {0, 1, 2, 3};
  write_shard(bad.file("x.h5"), {kShardFormatVersion, "train", 0, 1, 3, kVocab, "h"}, s, t);
  EXPECT_THROW_WITH(ShardReader(bad.file("x.h5")), DataError, "x.h5", "/src/offsets", "decreases");
  s.offsets = {0, 1, 2, 5};
  write_shard(bad.file("y.h5"), {kShardFormatVersion, "train", 0, 1, 3, kVocab, "h"}, s, t);
  EXPECT_THROW_WITH(ShardReader(bad.file("y.h5")), DataError, "y.h5", "/src/offsets", "ends at 5");
}

TEST(Shards, CorruptManifest) {
  TempDir dir;
  write_shard_dir(dir.path(), random_pairs(10, 5, kVocab), 1, kVocab);
  // A multilingual manifest whose lang_tag is none of none, source, decoder.
  std::ifstream good_in(dir.file("manifest.json"));
  std::string good((std::istreambuf_iterator<char>(good_in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(good.front(), '{');
  nmt::testing::write_text(dir.file("manifest.json"), "{\"directions\": [\"de-en\"], \"lang_tag\": \"both\", " + good.substr(1));
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "manifest.json", "'lang_tag' = 'both'");
  nmt::testing::write_text(dir.file("manifest.json"), "{\"format_version\": 1, \"src_lang\": 3}");
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "manifest.json", "src_lang");
  nmt::testing::write_text(dir.file("manifest.json"), "{not json");
  EXPECT_THROW_WITH(ShardedCorpus(dir.path().string(), "train"), DataError, "manifest.json", "JSON");
}

// Writes a shard with known ids for tests/check_shard_h5py.py (ctest fixture).
// Regression inputs found by tests/fuzz_readers.cpp: each must be refused with DataError.
TEST(Shards, FuzzFindingsAreRefusedWithDataError) {
  for (const char* name : {"fuzz-manifest-number-overflow.json"}) {
    const std::string path = std::string(NMTRAIN_SOURCE_DIR) + "/tests/fixtures/" + name;
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << path;
    EXPECT_THROW_WITH(Manifest::from_json(text, path), DataError, name, "not valid JSON");
  }
}

TEST(Shards, WriteFixtureForH5py) {
  const char* out = std::getenv("NMTRAIN_H5PY_FIXTURE_DIR");
  if (!out) GTEST_SKIP() << "NMTRAIN_H5PY_FIXTURE_DIR not set (ctest sets it)";
  std::filesystem::remove_all(out);
  auto pairs = random_pairs(37, 8, kVocab, 11);
  write_shard_dir(out, pairs, 2, kVocab);
  std::string expected;
  for (const auto& p : pairs) {
    for (int id : p.src) expected += std::to_string(id) + " ";
    expected += "|";
    for (int id : p.tgt) expected += " " + std::to_string(id);
    expected += "\n";
  }
  nmt::testing::write_text((std::filesystem::path(out) / "expected.txt").string(), expected);
}

}  // namespace
}  // namespace nmt::data
