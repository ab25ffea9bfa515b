// Loss, schedules and Adam against hand computations and LibTorch's own references.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "model/kernels/fused_cross_entropy.h"
#include "optim/adam.h"
#include "optim/loss.h"
#include "optim/loss_scaler.h"
#include "optim/lr_schedule.h"

namespace nmt::trainer {
namespace {

TEST(Loss, LabelSmoothedMatchesHandComputation) {
  // Two positions, vocabulary 3, the second position is padding (id 0) and ignored.
  const auto logits = torch::tensor({1.0, 2.0, 0.5, 9.0, 9.0, 9.0}, torch::kFloat64).view({1, 2, 3});
  const auto target = torch::tensor({1, 0}, torch::kInt64).view({1, 2});
  const double eps = 0.1;
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(0.5));
  const double lp[3] = {1.0 - lse, 2.0 - lse, 0.5 - lse};
  const double want = (1 - eps) * -lp[1] + eps / 3 * (-lp[0] - lp[1] - lp[2]);
  const auto l = label_smoothed_loss(logits.to(torch::kFloat32), target, 0, eps, [](const torch::Tensor& h) { return h; });
  EXPECT_EQ(l.tokens, 1);
  EXPECT_NEAR(l.loss.item<double>(), want, 1e-5);
  EXPECT_NEAR(l.nll.item<double>(), -lp[1], 1e-5);
}

TEST(Loss, EqualsPyTorchCrossEntropyWithLabelSmoothing) {
  torch::manual_seed(0);
  const auto logits = torch::randn({4, 6, 11});
  auto target = torch::randint(1, 11, {4, 6}, torch::kInt64);
  target.index_put_({torch::indexing::Slice(), torch::indexing::Slice(4, 6)}, 0);
  target[3][2] = 0;
  for (double eps : {0.0, 0.1, 0.3}) {
    const auto ours = label_smoothed_loss(logits, target, 0, eps, [](const torch::Tensor& h) { return h; });
    namespace F = torch::nn::functional;
    const auto ref = F::cross_entropy(
        logits.view({-1, 11}), target.view({-1}),
        F::CrossEntropyFuncOptions().ignore_index(0).label_smoothing(eps).reduction(torch::kSum));
    EXPECT_NEAR(ours.loss.item<double>(), ref.item<double>(), 1e-3) << "eps " << eps;
    EXPECT_EQ(ours.tokens, target.ne(0).sum().item<int64_t>());
  }
}

// The fused CPU kernel against LibTorch's log_softmax -> gather -> sum chain computed in
// float64: per-row losses, and the gradient of a weighted sum of them.
TEST(Loss, FusedKernelMatchesLogSoftmaxChainAndItsGradient) {
  torch::manual_seed(3);
  for (int64_t v : {7, 8000, 1003}) {
    for (double eps : {0.0, 0.1}) {
      // Large spread and offset: the kernel must subtract the row max.
      const auto base = torch::randn({37, v}) * 6.0 + 40.0;
      const auto target = torch::randint(0, v, {37}, torch::kInt64);
      const auto weights = torch::rand({37});
      auto z = base.clone().requires_grad_(true);
      const RowLosses rows = fused_label_smoothed_cross_entropy(z.clone(), target, eps);
      (rows.loss * weights).sum().backward();

      auto z64 = base.to(torch::kFloat64).requires_grad_(true);
      const auto lp = torch::log_softmax(z64, -1);
      const auto nll = -lp.gather(1, target.unsqueeze(1)).squeeze(1);
      const auto want = (1 - eps) * nll - (eps / static_cast<double>(v)) * lp.sum(-1);
      (want * weights.to(torch::kFloat64)).sum().backward();

      EXPECT_TRUE(torch::allclose(rows.loss.to(torch::kFloat64), want, 1e-5, 1e-4)) << "V " << v << " eps " << eps;
      EXPECT_TRUE(torch::allclose(rows.nll.to(torch::kFloat64), nll, 1e-5, 1e-4)) << "V " << v;
      // Logits near 40 carry a float32 rounding of ~4e-6 (one ulp), and so does z - lse.
      EXPECT_TRUE(torch::allclose(z.grad().to(torch::kFloat64), z64.grad(), 1e-5, 2e-5))
          << "V " << v << " eps " << eps << " max diff " << (z.grad().to(torch::kFloat64) - z64.grad()).abs().max().item<double>()
          << " max grad " << z64.grad().abs().max().item<double>();
      EXPECT_FALSE(rows.nll.requires_grad());
    }
  }
}

TEST(Loss, FusedKernelRejectsBadInputAndASecondBackward) {
  const auto target = torch::tensor({0, 4}, torch::kInt64);
  EXPECT_THROW(fused_label_smoothed_cross_entropy(torch::zeros({2, 4}), target, 0.1), c10::Error);  // id 4 of 4
  EXPECT_THROW(fused_label_smoothed_cross_entropy(torch::zeros({2, 4}, torch::kFloat64), target, 0.1), c10::Error);
  auto z = torch::zeros({2, 5}).requires_grad_(true);
  EXPECT_THROW(fused_label_smoothed_cross_entropy(z, target, 0.1), c10::Error);  // a leaf would be overwritten
  const auto loss = fused_label_smoothed_cross_entropy(z * 1.0, target, 0.1).loss.sum();
  loss.backward({}, /*retain_graph=*/true);
  EXPECT_THROW(loss.backward(), c10::Error);
}

TEST(Schedule, NoamFollowsItsFormula) {
  config::ScheduleConfig c;
  c.type = config::ScheduleType::kNoam;
  c.factor = 2.0;
  c.warmup_updates = 4000;
  LrSchedule s(c, 512, /*max_updates=*/0);
  for (int64_t u : {1, 10, 3999, 4000, 4001, 100000}) {
    const double want = 2.0 * std::pow(512.0, -0.5) * std::min(std::pow(u, -0.5), u * std::pow(4000.0, -1.5));
    EXPECT_DOUBLE_EQ(s.lr(u), want) << u;
  }
  EXPECT_GT(s.lr(4000), s.lr(3000));
  EXPECT_GT(s.lr(4000), s.lr(5000));
}

TEST(Schedule, InverseSqrtFollowsItsFormula) {
  config::ScheduleConfig c;
  c.type = config::ScheduleType::kInverseSqrt;
  c.lr = 1e-3;
  c.warmup_updates = 100;
  c.warmup_init_lr = 1e-7;
  LrSchedule s(c, 512, /*max_updates=*/0);
  EXPECT_NEAR(s.lr(1), 1e-7 + (1e-3 - 1e-7) * 1 / 100.0, 1e-15);
  EXPECT_NEAR(s.lr(50), 1e-7 + (1e-3 - 1e-7) * 0.5, 1e-15);
  EXPECT_DOUBLE_EQ(s.lr(100), 1e-3);
  EXPECT_DOUBLE_EQ(s.lr(400), 1e-3 * std::sqrt(100.0 / 400.0));
  c.type = config::ScheduleType::kConstant;
  EXPECT_DOUBLE_EQ(LrSchedule(c, 512, 0).lr(12345), 1e-3);
}

// Values worked out by hand for lr 1e-3, min_lr 1e-5, warmup 100, total 1100 updates:
// t = (u - 100) / 1000; cosine keeps (1 + cos(pi t)) / 2 of the 9.9e-4 above min_lr, linear 1 - t.
TEST(Schedule, CosineAndLinearDecayToMinLrAtTheBudget) {
  config::ScheduleConfig c;
  c.lr = 1e-3;
  c.min_lr = 1e-5;
  c.warmup_updates = 100;
  c.type = config::ScheduleType::kCosine;
  const LrSchedule cosine(c, 512, /*max_updates=*/1100);
  EXPECT_NEAR(cosine.lr(50), 5e-4, 1e-18);                    // warmup from 0: half way
  EXPECT_NEAR(cosine.lr(100), 1e-3, 1e-18);                   // peak
  EXPECT_NEAR(cosine.lr(350), 8.550178566873410e-4, 1e-15);   // t = 1/4: (1 + 0.70710678) / 2 = 0.85355339
  EXPECT_NEAR(cosine.lr(600), 5.05e-4, 1e-15);                // t = 1/2: half of the way down
  EXPECT_NEAR(cosine.lr(1100), 1e-5, 1e-18);                  // the budget's last update
  EXPECT_NEAR(cosine.lr(5000), 1e-5, 1e-18);                  // and beyond (a resumed, extended run)
  c.type = config::ScheduleType::kLinear;
  const LrSchedule linear(c, 512, 1100);
  EXPECT_NEAR(linear.lr(350), 7.525e-4, 1e-15);               // 1e-5 + 9.9e-4 * 0.75
  EXPECT_NEAR(linear.lr(600), 5.05e-4, 1e-15);
  EXPECT_NEAR(linear.lr(1100), 1e-5, 1e-18);
  // schedule.total_updates, when set, wins over the run's budget.
  c.total_updates = 600;
  EXPECT_NEAR(LrSchedule(c, 512, 1100).lr(350), 1e-5 + 9.9e-4 * 0.5, 1e-15);
}

TEST(Adam, MatchesLibTorchAdamW) {
  torch::manual_seed(1);
  auto a = torch::randn({5, 3}).requires_grad_(true);
  auto b = a.detach().clone().requires_grad_(true);
  config::OptimConfig oc;
  oc.weight_decay = 0.01;
  Adam ours({{"w", a}}, oc);
  torch::optim::AdamW ref({b}, torch::optim::AdamWOptions(1e-2).betas({0.9, 0.98}).eps(1e-9).weight_decay(0.01));
  for (int step = 0; step < 5; ++step) {
    const auto target = torch::randn({5, 3});
    a.mutable_grad() = (a.detach() - target) * 2;
    b.mutable_grad() = (b.detach() - target) * 2;
    ours.step(1e-2);
    ref.step();
  }
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-6);
  const auto st = ours.state_dict().at("w");
  EXPECT_EQ(st.at("step").item<double>(), 5.0);
}

TEST(Adam, StateRoundTripsAndRejectsMismatch) {
  auto p = torch::randn({4}).requires_grad_(true);
  Adam a({{"p", p}}, config::OptimConfig{});
  p.mutable_grad() = torch::ones({4});
  a.step(0.1);
  Adam b({{"p", p}}, config::OptimConfig{});
  b.load_state_dict(a.state_dict());
  EXPECT_TRUE(b.state_dict().at("p").at("exp_avg").equal(a.state_dict().at("p").at("exp_avg")));
  auto q = torch::randn({5}).requires_grad_(true);
  Adam c({{"p", q}}, config::OptimConfig{});
  EXPECT_THROW(c.load_state_dict(a.state_dict()), std::runtime_error);
  Adam d({{"other", p}}, config::OptimConfig{});
  EXPECT_THROW(d.load_state_dict(a.state_dict()), std::runtime_error);
}

}  // namespace
}  // namespace nmt::trainer

namespace nmt::trainer {
namespace {

TEST(LossScaler, OverflowSkipsAndHalvesCleanStepsGrow) {
  LossScaler s(/*init_scale=*/1024, /*growth_interval=*/3);
  EXPECT_FALSE(s.update(false));
  EXPECT_TRUE(s.update(true));  // overflow: skip the update ...
  EXPECT_EQ(s.scale(), 512);    // ... and halve the scale
  EXPECT_FALSE(s.update(false));
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_FALSE(s.update(false));  // third clean step in a row
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_EQ(s.skipped(), 1);
}

}  // namespace
}  // namespace nmt::trainer
