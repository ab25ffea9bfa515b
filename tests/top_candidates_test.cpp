// A decoding step's candidates (model/kernels/top_candidates) against LibTorch's log_softmax and a
// stable sort, for the fused CPU kernel and for the LibTorch-ops path other devices take.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "model/kernels/top_candidates.h"

namespace nmt::eval {
namespace {

using Fn = model::kernels::Candidates (*)(const torch::Tensor&, int64_t, const std::vector<int64_t>&,
                                          const std::vector<int64_t>&);

struct Expected {
  std::vector<float> log_probs;
  std::vector<int64_t> tokens;
};

// The reference: log_softmax in double over the whole row, then the allowed tokens sorted by
// logit, larger first, equal logits by lower id (a stable sort of the ids in order).
Expected reference_row(const torch::Tensor& row, int64_t k, const std::vector<int64_t>& banned, int64_t forced) {
  const torch::Tensor lp = torch::log_softmax(row.to(torch::kFloat64), 0);
  std::vector<int64_t> ids;
  for (int64_t j = 0; j < row.size(0); ++j) {
    const bool allowed = forced >= 0 ? j == forced : std::find(banned.begin(), banned.end(), j) == banned.end();
    if (allowed) ids.push_back(j);
  }
  auto z = row.accessor<float, 1>();
  std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) { return z[a] > z[b]; });
  Expected e;
  for (int64_t c = 0; c < k; ++c) {
    if (c < static_cast<int64_t>(ids.size())) {
      e.log_probs.push_back(static_cast<float>(lp[ids[c]].item<double>()));
      e.tokens.push_back(ids[c]);
    } else {
      e.log_probs.push_back(-std::numeric_limits<float>::infinity());
    }
  }
  return e;
}

void expect_matches_reference(Fn fn, const torch::Tensor& logits, int64_t k, const std::vector<int64_t>& banned,
                              const std::vector<int64_t>& forced, const char* what) {
  const model::kernels::Candidates got = fn(logits, k, banned, forced);
  ASSERT_EQ(got.log_probs.sizes(), (std::vector<int64_t>{logits.size(0), k})) << what;
  ASSERT_EQ(got.tokens.sizes(), (std::vector<int64_t>{logits.size(0), k})) << what;
  ASSERT_TRUE(got.log_probs.device().is_cpu() && got.tokens.device().is_cpu()) << what;
  for (int64_t r = 0; r < logits.size(0); ++r) {
    const Expected e = reference_row(logits[r], k, banned, forced.empty() ? -1 : forced[r]);
    for (int64_t c = 0; c < k; ++c) {
      const float lp = got.log_probs[r][c].item<float>();
      if (std::isinf(e.log_probs[c])) {
        EXPECT_TRUE(std::isinf(lp) && lp < 0) << what << " row " << r << " rank " << c;
        continue;
      }
      EXPECT_EQ(got.tokens[r][c].item<int64_t>(), e.tokens[c]) << what << " row " << r << " rank " << c;
      EXPECT_NEAR(lp, e.log_probs[c], 2e-5) << what << " row " << r << " rank " << c;
    }
  }
}

class TopCandidates : public ::testing::TestWithParam<bool> {
 protected:
  Fn fn() const {
    return GetParam() ? &model::kernels::top_candidates : &model::kernels::top_candidates_with_torch_ops;
  }
};

TEST_P(TopCandidates, MatchLogSoftmaxAndSortOnRandomLogits) {
  torch::manual_seed(7);
  // 8,000 ids as the recipe's vocabulary, one that is not a multiple of the kernel's
  // block, and rows of very different scales (a confident and a flat distribution).
  for (int64_t vocab : {8000, 1001}) {
    torch::Tensor logits = torch::randn({13, vocab}) * 3.0;
    logits[0].mul_(20.0);
    logits[1].mul_(0.01);
    for (int64_t k : {1, 2, 10})
      expect_matches_reference(fn(), logits, k, {0, 2}, {}, "random");
  }
}

TEST_P(TopCandidates, BannedTokensAreNeverChosenButCountInTheNormalizer) {
  // Row 0's two largest logits belong to banned ids: the next ones are chosen, and their
  // log-probabilities still include the banned ids' mass.
  const torch::Tensor logits = torch::tensor({{9.0f, 1.0f, 8.0f, 2.0f, 3.0f}, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f}});
  const model::kernels::Candidates got = fn()(logits, 2, {0, 2}, {});
  EXPECT_EQ(got.tokens[0][0].item<int64_t>(), 4);
  EXPECT_EQ(got.tokens[0][1].item<int64_t>(), 3);
  const double lse = std::log(std::exp(9.0) + std::exp(1.0) + std::exp(8.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(got.log_probs[0][0].item<float>(), 3.0 - lse, 1e-5);
  EXPECT_NEAR(got.log_probs[0][1].item<float>(), 2.0 - lse, 1e-5);
  EXPECT_NEAR(got.log_probs[1][0].item<float>(), -std::log(5.0), 1e-6);
  // Equal logits: the fused kernel ranks the lower allowed ids first (LibTorch's topk
  // leaves the order of ties open).
  if (!GetParam()) return;
  EXPECT_EQ(got.tokens[1][0].item<int64_t>(), 1);
  EXPECT_EQ(got.tokens[1][1].item<int64_t>(), 3);
  expect_matches_reference(fn(), logits, 2, {0, 2}, {}, "hand");
}

TEST_P(TopCandidates, AForcedRowHasOnlyItsTokenAndOtherRowsAreUntouched) {
  torch::manual_seed(3);
  const torch::Tensor logits = torch::randn({4, 300});
  const std::vector<int64_t> forced = {-1, 3, -1, 3};  // rows 1 and 3 at their length limit: EOS only
  expect_matches_reference(fn(), logits, 4, {0, 2}, forced, "forced");
  const model::kernels::Candidates got = fn()(logits, 4, {0, 2}, forced);
  EXPECT_EQ(got.tokens[1][0].item<int64_t>(), 3);
  EXPECT_NEAR(got.log_probs[1][0].item<float>(), torch::log_softmax(logits[1], 0)[3].item<float>(), 1e-5);
  EXPECT_TRUE(std::isinf(got.log_probs[1][1].item<float>()));
}

TEST_P(TopCandidates, FewerAllowedTokensThanKFillWithMinusInfinity) {
  const torch::Tensor logits = torch::tensor({{0.5f, 1.5f, -1.0f, 2.0f}});
  expect_matches_reference(fn(), logits, 6, {0, 2}, {}, "small vocabulary");
  const model::kernels::Candidates got = fn()(logits, 6, {0, 2}, {});
  EXPECT_EQ(got.tokens[0][0].item<int64_t>(), 3);
  EXPECT_EQ(got.tokens[0][1].item<int64_t>(), 1);
  for (int64_t c = 2; c < 6; ++c) EXPECT_TRUE(std::isinf(got.log_probs[0][c].item<float>()));
}

TEST_P(TopCandidates, RejectsMalformedArguments) {
  const torch::Tensor logits = torch::zeros({2, 5});
  EXPECT_THROW(fn()(logits.to(torch::kFloat64), 1, {}, {}), c10::Error);
  EXPECT_THROW(fn()(logits, 0, {}, {}), c10::Error);
  EXPECT_THROW(fn()(logits, 1, {}, {3}), c10::Error);      // one forced entry for two rows
  EXPECT_THROW(fn()(logits, 1, {}, {3, 5}), c10::Error);   // token 5 outside a vocabulary of 5
}

INSTANTIATE_TEST_SUITE_P(FusedAndTorchOps, TopCandidates, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "FusedCpuKernel" : "TorchOps"; });

}  // namespace
}  // namespace nmt::eval
