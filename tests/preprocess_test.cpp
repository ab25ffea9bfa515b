// preprocess: policies, byte identity, reuse of a model, and no damage on bad input.
#include <zlib.h>

#include <cstdio>
#include <random>

#include "data/data_error.h"
#include "data/preprocess.h"
#include "data/sharded_corpus.h"
#include "tests/test_util.h"

namespace nmt::data {
namespace {

using nmt::testing::read_text;
using nmt::testing::TempDir;
using nmt::testing::write_text;

std::string sentences(int n, unsigned seed, int max_words = 8) {
  static const char* words[] = {"ein", "Mann", "eine", "Frau", "spielt", "mit", "dem", "Hund", "im", "Park",
                                "zwei", "Kinder", "laufen", "über", "die", "Straße", "a", "man", "woman", "plays",
                                "with", "the", "dog", "in", "park", "two", "children", "run", "across", "street"};
  std::mt19937 rng(seed);
  std::string out;
  for (int i = 0; i < n; ++i) {
    const int len = 1 + static_cast<int>(rng() % max_words);
    for (int w = 0; w < len; ++w) out += std::string(w ? " " : "") + words[rng() % 30];
    out += "\n";
  }
  return out;
}

void write_gz(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

struct RawCorpus {
  TempDir dir;
  RawCorpus() {
    std::string src = sentences(300, 1), tgt = sentences(300, 2);
    // Line 10: empty target; line 20: a very long source.
    auto nth_line = [](std::string& text, int n) -> std::pair<size_t, size_t> {
      size_t start = 0;
      for (int i = 0; i < n; ++i) start = text.find('\n', start) + 1;
      return {start, text.find('\n', start) - start};
    };
    auto [s10, n10] = nth_line(tgt, 10);
    tgt.replace(s10, n10, "");
    auto [s20, n20] = nth_line(src, 20);
    std::string long_line;
    for (int i = 0; i < 200; ++i) long_line += "Straße Kinder ";
    src.replace(s20, n20, long_line);
    write_text(dir.file("train.de"), src);
    write_gz(dir.file("train.en.gz"), tgt);
    std::string vsrc = sentences(20, 3), vtgt = sentences(20, 4);
    vsrc.replace(0, vsrc.find('\n'), "");  // empty first source line in a non-training split
    write_text(dir.file("val.de"), vsrc);
    write_text(dir.file("val.en"), vtgt);
  }
  DataConfig config(const std::string& out) const {
    DataConfig c;
    c.raw_dir = dir.path().string();
    c.shard_dir = out;
    c.vocab_size = 60;
    c.num_shards = 3;
    c.max_len = 40;
    return c;
  }
};

TEST(Preprocess, AppliesAndReportsPolicies) {
  RawCorpus raw;
  TempDir out;
  Manifest m = preprocess(raw.config(out.path().string()), stderr);
  const SplitEntry& train = m.splits.at("train");
  EXPECT_EQ(train.raw_lines, 300);
  EXPECT_EQ(train.skipped_empty, 1);
  EXPECT_EQ(train.skipped_too_long, 1);
  EXPECT_EQ(train.examples, 298);
  EXPECT_EQ(train.shards.size(), 3u);
  const SplitEntry& val = m.splits.at("val");
  EXPECT_EQ(val.examples, 20);  // other splits keep every line, aligned with their references
  ShardedCorpus corpus(out.path().string(), "val");
  EXPECT_EQ(corpus.src_lengths()[0], 0);
  EXPECT_EQ(m.vocab_size, 60);
  EXPECT_EQ(m.special.pad, 0);
  EXPECT_EQ(m.special.eos, 3);
}

TEST(Preprocess, SameInputSameBytesAndModelReuse) {
  RawCorpus raw;
  TempDir a, b, c;
  preprocess(raw.config(a.path().string()), stderr);
  preprocess(raw.config(b.path().string()), stderr);
  DataConfig reuse = raw.config(c.path().string());
  reuse.spm_model = a.file("spm.model");
  preprocess(reuse, stderr);
  for (const auto& f : {"manifest.json", "spm.model", "train-00000-of-00003.h5", "train-00002-of-00003.h5",
                        "val-00000-of-00001.h5"}) {
    EXPECT_EQ(read_text(a.file(f)), read_text(b.file(f))) << f;
    EXPECT_EQ(read_text(a.file(f)), read_text(c.file(f))) << f;
  }
}

// data.spm_sample_lines below the corpus: SentencePiece trains on a seeded sample, the same
// one every time (byte-identical model and shards), the log says so, and the vocabulary is
// not the whole corpus's. At or above it the corpus is taken whole (the default's case).
TEST(Preprocess, SentencePieceOnASeededSampleOfTheTrainingLines) {
  RawCorpus raw;
  TempDir whole, a, b;
  preprocess(raw.config(whole.path().string()), stderr);
  DataConfig sampled = raw.config(a.path().string());
  sampled.spm_sample_lines = 200;
  std::FILE* log = std::tmpfile();
  preprocess(sampled, log);
  std::rewind(log);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), log));
  std::fclose(log);
  // 300 + 300 lines, one target line empty.
  EXPECT_NE(text.find("on 300 + 300 lines: a seeded sample of 200 of their 599 non-empty lines (data.spm_sample_lines)"),
            std::string::npos) << text;
  sampled.shard_dir = b.path().string();
  preprocess(sampled, stderr);
  for (const auto& f : {"spm.model", "manifest.json", "train-00000-of-00003.h5"})
    EXPECT_EQ(read_text(a.file(f)), read_text(b.file(f))) << f;
  EXPECT_NE(read_text(a.file("spm.model")), read_text(whole.file("spm.model")));
  TempDir exact;
  DataConfig all_lines = raw.config(exact.path().string());
  all_lines.spm_sample_lines = 599;  // exactly the corpus: taken whole
  preprocess(all_lines, stderr);
  EXPECT_EQ(read_text(exact.file("spm.model")), read_text(whole.file("spm.model")));
}

// data.workers: the shards are the same bytes for any number of encoding threads, including
// more threads than lines in a block's tail.
TEST(Preprocess, ShardsAreTheSameForAnyNumberOfWorkers) {
  RawCorpus raw;
  TempDir one, three, seven;
  DataConfig c = raw.config(one.path().string());
  c.workers = 1;
  preprocess(c, stderr);
  c.shard_dir = three.path().string();
  c.workers = 3;
  preprocess(c, stderr);
  c.shard_dir = seven.path().string();
  c.workers = 7;
  preprocess(c, stderr);
  for (const auto& f : {"manifest.json", "spm.model", "train-00000-of-00003.h5", "train-00001-of-00003.h5",
                        "train-00002-of-00003.h5", "val-00000-of-00001.h5"}) {
    EXPECT_EQ(read_text(one.file(f)), read_text(three.file(f))) << f;
    EXPECT_EQ(read_text(one.file(f)), read_text(seven.file(f))) << f;
  }
}

TEST(Preprocess, MismatchedLineCountsAreAnErrorAndDamageNothing) {
  RawCorpus raw;
  TempDir out;
  preprocess(raw.config(out.path().string()), stderr);
  const std::string manifest_before = read_text(out.file("manifest.json"));
  const std::string shard_before = read_text(out.file("val-00000-of-00001.h5"));
  write_text(raw.dir.file("val.en"), sentences(19, 4));
  EXPECT_THROW_WITH(preprocess(raw.config(out.path().string()), stderr), DataError, "val.de", "has 20 lines",
                    "val.en", "has 19");
  EXPECT_EQ(read_text(out.file("manifest.json")), manifest_before);
  EXPECT_EQ(read_text(out.file("val-00000-of-00001.h5")), shard_before);
}

TEST(Preprocess, MissingInputsAreNamed) {
  TempDir empty, out;
  DataConfig c;
  c.raw_dir = empty.path().string();
  c.shard_dir = out.path().string();
  EXPECT_THROW_WITH(preprocess(c, stderr), DataError, "missing raw files: ", "train.de[.gz]", "val.en[.gz]");
  c.raw_dir = empty.file("nope");
  EXPECT_THROW_WITH(preprocess(c, stderr), DataError, "nope", "does not exist");
  RawCorpus raw;
  c = raw.config(out.path().string());
  write_text(out.file("bad.model"), "garbage");
  c.spm_model = out.file("bad.model");
  EXPECT_THROW_WITH(preprocess(c, stderr), DataError, "bad.model", "not a SentencePiece model");
  EXPECT_FALSE(std::filesystem::exists(out.file("manifest.json")));
}

}  // namespace
}  // namespace nmt::data
