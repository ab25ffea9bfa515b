// preprocess: policies, byte identity, reuse of a model, and no damage on bad input.
#include <sentencepiece_processor.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "data/data_error.h"
#include "data/preprocess.h"
#include "data/shard_format.h"
#include "data/shard_io.h"
#include "data/text_file.h"
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
    // Line 10: empty target; line 20: a very long source; line 30: a target of spaces alone,
    // which SentencePiece encodes to no pieces.
    auto nth_line = [](std::string& text, int n) -> std::pair<size_t, size_t> {
      size_t start = 0;
      for (int i = 0; i < n; ++i) start = text.find('\n', start) + 1;
      return {start, text.find('\n', start) - start};
    };
    auto [s10, n10] = nth_line(tgt, 10);
    tgt.replace(s10, n10, "");
    auto [s30, n30] = nth_line(tgt, 30);
    tgt.replace(s30, n30, "   ");
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
  EXPECT_EQ(train.skipped_empty, 2);
  EXPECT_EQ(train.skipped_too_long, 1);
  EXPECT_EQ(train.examples, 297);
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

// The raw text is streamed in blocks of 8,192 lines and the shards are written from a spill of
// encoded pairs: over a corpus of several blocks whose shard boundaries fall inside blocks,
// every kept example must hold exactly SentencePiece's own encoding of its line (the model
// preprocess wrote, loaded independently), in corpus order, and gzip must give what plain
// text gives.
TEST(Preprocess, StreamedShardsHoldEachLinesOwnEncodingAcrossBlocks) {
  TempDir raw, plain_out, gz_out, raw_gz;
  const std::string src = sentences(20000, 11, 30), tgt = sentences(20000, 12, 30);
  write_text(raw.file("train.de"), src);
  write_text(raw.file("train.en"), tgt);
  write_text(raw.file("val.de"), sentences(5, 13));
  write_text(raw.file("val.en"), sentences(5, 14));
  write_gz(raw_gz.file("train.de.gz"), src);
  write_gz(raw_gz.file("train.en.gz"), tgt);
  write_gz(raw_gz.file("val.de.gz"), sentences(5, 13));
  write_gz(raw_gz.file("val.en.gz"), sentences(5, 14));
  DataConfig c;
  c.raw_dir = raw.path().string();
  c.shard_dir = plain_out.path().string();
  c.vocab_size = 80;
  c.num_shards = 7;
  c.max_len = 20;  // lines of up to 30 words: the longer ones are dropped, so kept != line index
  const Manifest m = preprocess(c, stderr);
  c.raw_dir = raw_gz.path().string();
  c.shard_dir = gz_out.path().string();
  preprocess(c, stderr);
  for (const auto& f : {"manifest.json", "spm.model", "train-00003-of-00007.h5", "val-00000-of-00001.h5"})
    EXPECT_EQ(read_text(plain_out.file(f)), read_text(gz_out.file(f))) << f;

  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(plain_out.file("spm.model")).ok());
  const std::vector<std::string> src_lines = read_lines(raw.file("train.de")), tgt_lines = read_lines(raw.file("train.en"));
  std::vector<std::vector<int>> expected_src, expected_tgt;
  for (size_t i = 0; i < src_lines.size(); ++i) {
    std::vector<int> a, b;
    ASSERT_TRUE(sp.Encode(src_lines[i], &a).ok());
    ASSERT_TRUE(sp.Encode(tgt_lines[i], &b).ok());
    if (a.size() > 20 || b.size() > 20) continue;
    expected_src.push_back(a);
    expected_tgt.push_back(b);
  }
  ASSERT_GT(m.splits.at("train").skipped_too_long, 0);
  ASSERT_EQ(m.splits.at("train").examples, static_cast<int64_t>(expected_src.size()));
  size_t next = 0;
  for (int k = 0; k < 7; ++k) {
    ShardReader shard(plain_out.file(shard_file_name("train", k, 7)));
    for (int64_t i = 0; i < shard.header().num_examples; ++i, ++next) {
      std::vector<int32_t> a, b;
      shard.read_example(i, &a, &b);
      ASSERT_EQ(std::vector<int>(a.begin(), a.end()), expected_src[next]) << "shard " << k << " example " << i;
      ASSERT_EQ(std::vector<int>(b.begin(), b.end()), expected_tgt[next]) << "shard " << k << " example " << i;
    }
  }
  EXPECT_EQ(next, expected_src.size());
}

// A gzip file cut short is an error naming the file and the last whole line read, and nothing
// is published.
TEST(Preprocess, TruncatedGzipIsAnErrorNamingTheFile) {
  RawCorpus raw;
  TempDir out;
  const std::string gz = read_text(raw.dir.file("train.en.gz"));
  write_text(raw.dir.file("train.en.gz"), gz.substr(0, gz.size() / 2));
  try {
    preprocess(raw.config(out.path().string()), stderr);
    FAIL() << "a truncated gzip file was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("train.en.gz: read error after line"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(out.file("manifest.json")));
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
