// BLEU against sacreBLEU: its own published test values, and 260+ generated cases scored
// by sacreBLEU from PyPI (tests/bleu_reference.py, run by ctest before this test).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/bleu.h"

namespace nmt::eval {
namespace {

TEST(Bleu, PublishedScoringValue) {
  // sacreBLEU test_bleu.py: compute_bleu([9,7,5,3], [10,8,6,4], 11, 11) = 0.8375922397
  BleuStats s;
  s.correct = {9, 7, 5, 3};
  s.total = {10, 8, 6, 4};
  s.sys_len = s.ref_len = 11;
  EXPECT_NEAR(compute_bleu(s).score / 100, 0.8375922397, 1e-8);
}

TEST(Bleu, PublishedStatistics) {
  // sacreBLEU test_bleu.py: counts [4,2,1,0], totals [6,5,4,3].
  BleuStats s;
  s.add("am I am a character sequence", "I am a symbol string sequence a a");
  EXPECT_EQ(s.correct, (std::array<int64_t, 4>{4, 2, 1, 0}));
  EXPECT_EQ(s.total, (std::array<int64_t, 4>{6, 5, 4, 3}));
}

TEST(Bleu, EmptyHypothesesScoreZeroAndAreKept) {
  const auto b = corpus_bleu({"", "", ""}, {"The dog bit the man.", "It was not unexpected.", "The man bit him first."});
  EXPECT_EQ(b.score, 0.0);
  EXPECT_EQ(b.ref_len, 17);
  EXPECT_EQ(b.to_string(), "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 0.000 ratio = 0.000 hyp_len = 0 ref_len = 17)");
}

TEST(Bleu, PerfectMatchIsHundred) {
  const auto b = corpus_bleu({"A man rides a bike, fast."}, {"A man rides a bike, fast."});
  EXPECT_DOUBLE_EQ(b.score, 100.0);
}

TEST(Bleu, Tokenizer13aHandCases) {
  EXPECT_EQ(tokenize_13a("Hello, world!"), "Hello , world !");
  EXPECT_EQ(tokenize_13a("It costs 3.14 or 1,000."), "It costs 3.14 or 1,000 .");
  EXPECT_EQ(tokenize_13a("1990-2000 x-ray"), "1990 - 2000 x-ray");
  EXPECT_EQ(tokenize_13a("&quot;a&quot; &amp; b&lt;"), "\" a \" & b <");
  EXPECT_EQ(tokenize_13a("Straße\u00a0über"), "Straße über");  // NBSP is whitespace to Python
  EXPECT_EQ(tokenize_13a("  spaced   out  "), "spaced out");
}

TEST(Bleu, DifferentLengthsAreAnError) {
  EXPECT_THROW(corpus_bleu({"a"}, {"a", "b"}), std::invalid_argument);
}

TEST(Bleu, AgreesWithSacreBleuOnGeneratedCases) {
  const char* path = std::getenv("NMTRAIN_BLEU_CASES");
  if (!path) GTEST_SKIP() << "NMTRAIN_BLEU_CASES not set (ctest runs tests/bleu_reference.py first)";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("signature").get<std::string>(), bleu_signature()) << "sacreBLEU version or defaults changed";
  const auto& cases = j.at("cases");
  ASSERT_GE(cases.size(), 200u);
  int exact_lines = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto hyps = cases[k].at("hyps").get<std::vector<std::string>>();
    const auto refs = cases[k].at("refs").get<std::vector<std::string>>();
    const BleuScore b = corpus_bleu(hyps, refs);
    EXPECT_NEAR(b.score, cases[k].at("score").get<double>(), 0.01) << "case " << k;
    const std::string want = cases[k].at("line").get<std::string>();
    EXPECT_EQ(b.to_string(), want) << "case " << k;
    exact_lines += b.to_string() == want;
  }
  std::printf("BLEU: %d/%zu cases print exactly sacreBLEU's line\n", exact_lines, cases.size());
}

}  // namespace
}  // namespace nmt::eval
