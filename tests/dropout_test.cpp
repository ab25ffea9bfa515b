// The fused dropout-add kernel: exact forward/backward against its own keep decisions,
// drop rate and pair independence against Bernoulli(p) statistics, and determinism.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <mutex>

#include "model/kernels/fused_dropout.h"

namespace nmt::model {
namespace {

// The key dropout_add will draw after torch::manual_seed(seed).
uint64_t key_after_seed(uint64_t seed) {
  torch::manual_seed(seed);
  auto* gen = at::check_generator<at::CPUGeneratorImpl>(at::detail::getDefaultCPUGenerator());
  std::lock_guard<std::mutex> lock(gen->mutex_);
  return gen->random64();
}

TEST(FusedDropout, ForwardAndBackwardFollowTheKeepDecisions) {
  const double p = 0.3;
  const uint64_t key = key_after_seed(11);
  torch::manual_seed(11);
  auto x = torch::randn({5, 7, 33}).requires_grad_(true);
  auto y = torch::randn({5, 7, 33}).requires_grad_(true);
  // manual_seed again so that the key drawn is the one computed above (randn used the generator).
  torch::manual_seed(11);
  const auto out = kernels::dropout_add(x, y, p, true);
  const auto g = torch::randn({5, 7, 33});
  out.backward(g);

  auto keep = torch::empty({x.numel()}, torch::kFloat32);
  for (int64_t i = 0; i < x.numel(); ++i) keep[i] = kernels::dropout_keeps(key, i, p) ? 1.0f : 0.0f;
  keep = keep.view(x.sizes());
  const double scale = 1.0 / (1.0 - p);
  EXPECT_TRUE(torch::allclose(out, x.detach() + keep * y.detach() * scale, 1e-6, 1e-6));
  EXPECT_TRUE(torch::equal(x.grad(), g));
  EXPECT_TRUE(torch::allclose(y.grad(), keep * g * scale, 1e-6, 1e-6));
}

TEST(FusedDropout, DropRateAndPairIndependenceMatchBernoulli) {
  const int64_t n = 1 << 21;
  for (double p : {0.1, 0.5}) {
    torch::manual_seed(5);
    const auto out = kernels::dropout_add(torch::Tensor(), torch::ones({n}), p, true);
    const auto dropped = out.eq(0).to(torch::kFloat64);
    const double rate = dropped.mean().item<double>();
    const double sigma = std::sqrt(p * (1 - p) / static_cast<double>(n));
    EXPECT_NEAR(rate, p, 6 * sigma) << "p " << p;
    // Neighbours (consecutive counters) and elements 2^k apart must be independent.
    for (int64_t lag : {1, 2, 8, 1024}) {
      const double both = (dropped.slice(0, 0, n - lag) * dropped.slice(0, lag)).mean().item<double>();
      EXPECT_NEAR(both, p * p, 6 * std::sqrt(p * p * (1 - p * p) / static_cast<double>(n))) << "p " << p << " lag " << lag;
    }
    // Kept elements are scaled so that the expectation is unchanged.
    EXPECT_NEAR(out.mean().item<double>(), 1.0, 6 * sigma / (1 - p)) << "p " << p;
  }
}

TEST(FusedDropout, MasksFollowTheSeedNotTheThreadCount) {
  const auto y = torch::ones({300000});
  const int threads = at::get_num_threads();
  torch::manual_seed(3);
  const auto a = kernels::dropout_add(torch::Tensor(), y, 0.2, true);
  const auto b = kernels::dropout_add(torch::Tensor(), y, 0.2, true);
  at::set_num_threads(1);
  torch::manual_seed(3);
  const auto c = kernels::dropout_add(torch::Tensor(), y, 0.2, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(a, c));
  EXPECT_FALSE(torch::equal(a, b));  // a fresh key per call
}

TEST(FusedDropout, BlocksPast4GiElementsHaveTheirOwnMasks) {
  // Index i and 2^32 + i (and 2^33 + i) must decide independently: agreement ~ p^2 + (1-p)^2.
  const uint64_t key = 0x0123456789abcdefULL;
  const double p = 0.5;
  const int64_t n = 200000;
  for (int64_t block : {int64_t{1} << 32, int64_t{1} << 33}) {
    int64_t agree = 0;
    for (int64_t i = 0; i < n; ++i)
      agree += kernels::dropout_keeps(key, i, p) == kernels::dropout_keeps(key, block + i, p);
    EXPECT_NEAR(static_cast<double>(agree) / n, 0.5, 6 * std::sqrt(0.25 / n)) << block;
  }
}

TEST(FusedDropout, NonFiniteInputsStayNonFiniteEvenWhereDropped) {
  // As LibTorch's y * mask: a NaN in a dropped position still reaches the output, so the
  // trainer's non-finite check sees it.
  const auto y = torch::full({4096}, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(kernels::dropout_add(torch::zeros({4096}), y, 0.5, true).isnan().all().item<bool>());
}

TEST(FusedDropout, EvaluationZeroPAndUnfusableInputs) {
  const auto x = torch::randn({4, 9}), y = torch::randn({4, 9});
  EXPECT_TRUE(torch::equal(kernels::dropout_add(x, y, 0.3, false), x + y));
  EXPECT_TRUE(torch::equal(kernels::dropout_add(x, y, 0.0, true), x + y));
  // float64 and a non-contiguous input take LibTorch's dropout; the drop rate still holds.
  const auto ones = torch::ones({200000}, torch::kFloat64);
  const double rate =
      kernels::dropout_add(torch::Tensor(), ones, 0.25, true).eq(0).to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(rate, 0.25, 0.01);
  const auto t = torch::ones({300, 400}).t();
  EXPECT_NEAR(kernels::dropout_add(torch::Tensor(), t, 0.25, true).eq(0).to(torch::kFloat64).mean().item<double>(),
              0.25, 0.01);
  EXPECT_THROW(kernels::dropout_add(x, y, 1.0, true), c10::Error);
  EXPECT_TRUE(torch::equal(kernels::dropout_add(x, y, 1.0, false), x + y));  // evaluation ignores p
}

}  // namespace
}  // namespace nmt::model
