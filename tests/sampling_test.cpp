// Sampled decoding (eval/sampling.h) against the model's distribution as PyTorch computes it
// (tests/fixtures: the logits of make_model_fixtures.py's own forward pass): over many draws
// the first token's frequencies pass a chi-square test against softmax(logits / T) over the
// top k, and a sentence's draws depend on the seed and its line number only, not its batch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "eval/search.h"
#include "tests/model_fixture.h"

namespace nmt::eval {
namespace {

constexpr int64_t kPad = 0, kBos = 2, kEos = 3;

SearchOptions sampling_options(int64_t topk, double temperature, uint64_t seed) {
  SearchOptions o;
  o.beam = o.nbest = 1;
  o.bos = kBos;
  o.eos = kEos;
  o.pad = kPad;
  o.sample = true;
  o.sampling = {topk, temperature, seed};
  return o;
}

// What the first token should follow: PyTorch's first-step logits with pad and BOS removed,
// divided by T, cut to the k largest, through a softmax (double precision).
std::vector<double> expected_first_token(const torch::Tensor& logits, int64_t topk, double temperature) {
  std::vector<double> x(static_cast<size_t>(logits.size(0)));
  for (int64_t v = 0; v < logits.size(0); ++v) x[v] = logits[v].item<double>() / temperature;
  x[kPad] = x[kBos] = -INFINITY;
  if (topk > 0) {
    std::vector<double> sorted = x;
    std::sort(sorted.rbegin(), sorted.rend());
    const double cut = sorted[static_cast<size_t>(topk - 1)];
    for (double& v : x)
      if (v < cut) v = -INFINITY;
  }
  const double top = *std::max_element(x.begin(), x.end());
  double sum = 0;
  for (double& v : x) sum += (v = std::exp(v - top));
  for (double& v : x) v /= sum;
  return x;
}

// Pearson's statistic over the tokens expected at least 5 times (the rest pooled in one
// bin), and its degrees of freedom.
std::pair<double, int> chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t draws) {
  double stat = 0, pooled_expected = 0, pooled_seen = 0;
  int bins = 0;
  for (size_t v = 0; v < p.size(); ++v) {
    const double want = p[v] * static_cast<double>(draws);
    if (want < 5) {
      pooled_expected += want;
      pooled_seen += static_cast<double>(counts[v]);
      continue;
    }
    stat += (static_cast<double>(counts[v]) - want) * (static_cast<double>(counts[v]) - want) / want;
    ++bins;
  }
  if (pooled_expected >= 5) {
    stat += (pooled_seen - pooled_expected) * (pooled_seen - pooled_expected) / pooled_expected;
    ++bins;
  }
  return {stat, bins - 1};
}

TEST(Sampling, FirstTokenFrequenciesFollowTheModelsSoftmax) {
  const auto f = model::load_fixture("transformer_prenorm.pt");
  model::Transformer m = model::fixture_model(f);
  const torch::Tensor first_logits = f.at("logits").toTensor()[0][0];  // PyTorch's, sentence 0, after BOS
  const int64_t draws = 20000;
  const torch::Tensor src = f.at("src").toTensor()[0].unsqueeze(0).expand({draws, -1}).contiguous();
  std::vector<int64_t> lines(draws);
  std::iota(lines.begin(), lines.end(), 0);
  struct Case {
    int64_t topk;
    double temperature;
  };
  for (const Case c : {Case{0, 1.0}, Case{0, 1.7}, Case{5, 0.6}, Case{1, 1.0}}) {
    auto opt = sampling_options(c.topk, c.temperature, 7);
    opt.max_len_a = 0;
    opt.max_len_b = 1;  // one drawn token, then EOS
    Ensemble one(*m);
    const auto hyps = sample_search(one, src, opt, lines);
    const std::vector<double> p = expected_first_token(first_logits, c.topk, c.temperature);
    std::vector<int64_t> counts(p.size(), 0);
    for (const auto& h : hyps) ++counts[static_cast<size_t>(h[0].tokens.empty() ? kEos : h[0].tokens[0])];
    for (size_t v = 0; v < p.size(); ++v)
      if (p[v] == 0) EXPECT_EQ(counts[v], 0) << "token " << v << " has probability 0 but was drawn";
    const auto [stat, dof] = chi_square(counts, p, draws);
    if (dof == 0) continue;  // top-1: the one token, checked above
    // Above the 0.9999 quantile of chi-square(dof) by Wilson-Hilferty's approximation: a
    // correct sampler fails this once in 10,000 seeds; a wrong temperature or cut fails by far.
    const double z = 3.719, a = 2.0 / (9.0 * dof);
    const double bound = dof * std::pow(1 - a + z * std::sqrt(a), 3);
    EXPECT_LT(stat, bound) << "topk " << c.topk << " temperature " << c.temperature << ": chi-square " << stat
                           << " over " << dof << " degrees of freedom";
  }
}

TEST(Sampling, DrawsDependOnTheSeedAndTheLineOnly) {
  const auto f = model::load_fixture("transformer_prenorm.pt");
  model::Transformer m = model::fixture_model(f);
  const torch::Tensor src = f.at("src").toTensor();
  Ensemble one(*m);
  const auto opt = sampling_options(0, 1.3, 11);
  const std::vector<int64_t> lines = {40, 41, 42};
  const auto batched = sample_search(one, src, opt, lines);
  for (int64_t i = 0; i < src.size(0); ++i) {
    const int64_t len = src[i].ne(0).sum().item<int64_t>();
    const auto alone = sample_search(one, src[i].slice(0, 0, len).unsqueeze(0), opt, {lines[i]});
    EXPECT_EQ(alone[0][0].tokens, batched[i][0].tokens) << "sentence " << i;
    EXPECT_NEAR(alone[0][0].score, batched[i][0].score, 1e-4) << "sentence " << i;
  }
  // Another seed, or other line numbers, draw other sentences (over 64 sentences, surely).
  const torch::Tensor many = src[0].unsqueeze(0).expand({64, -1}).contiguous();
  std::vector<int64_t> ids(64), shifted(64);
  std::iota(ids.begin(), ids.end(), 0);
  std::iota(shifted.begin(), shifted.end(), 1000);
  const auto base = sample_search(one, many, opt, ids);
  const auto other_seed = sample_search(one, many, sampling_options(0, 1.3, 12), ids);
  const auto other_lines = sample_search(one, many, opt, shifted);
  const auto again = sample_search(one, many, opt, ids);
  int seed_differs = 0, lines_differ = 0;
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(base[i][0].tokens, again[i][0].tokens) << i;
    seed_differs += base[i][0].tokens != other_seed[i][0].tokens;
    lines_differ += base[i][0].tokens != other_lines[i][0].tokens;
  }
  EXPECT_GT(seed_differs, 0);
  EXPECT_GT(lines_differ, 0);
}

// Source tags are control symbols no translation may contain (SearchOptions::never_emit): the
// token greedy search puts first is banned, and neither greedy, beam nor sampling emits it.
TEST(Sampling, NeverEmitTokensAppearInNoSearch) {
  const auto f = model::load_fixture("transformer_prenorm.pt");
  model::Transformer m = model::fixture_model(f);
  const torch::Tensor src = f.at("src").toTensor();
  Ensemble one(*m);
  SearchOptions plain = sampling_options(0, 1.0, 1);
  plain.sample = false;
  const auto greedy = greedy_search(one, src, plain);
  ASSERT_FALSE(greedy[0][0].tokens.empty());
  const int64_t banned = greedy[0][0].tokens[0];
  for (int64_t beam : {1, 4}) {
    SearchOptions opt = plain;
    opt.beam = opt.nbest = beam;
    opt.never_emit = {banned};
    for (const auto& sentence : search(one, src, opt))
      for (const auto& h : sentence)
        EXPECT_EQ(std::count(h.tokens.begin(), h.tokens.end(), banned), 0) << "beam " << beam;
  }
  SearchOptions drawn = sampling_options(0, 2.0, 3);
  drawn.never_emit = {banned};
  const torch::Tensor many = src[0].unsqueeze(0).expand({500, -1}).contiguous();
  for (const auto& sentence : search(one, many, drawn))
    EXPECT_EQ(std::count(sentence[0].tokens.begin(), sentence[0].tokens.end(), banned), 0) << "sampling";
}

TEST(Sampling, CounterUniformIsInUnitIntervalAndUniform) {
  const int n = 100000;
  double sum = 0;
  std::vector<int> deciles(10, 0);
  for (int i = 0; i < n; ++i) {
    const double u = counter_uniform(5, static_cast<uint64_t>(i), 3);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    ++deciles[static_cast<size_t>(u * 10)];
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  for (int d : deciles) EXPECT_NEAR(d, n / 10, 500);
}

}  // namespace
}  // namespace nmt::eval
