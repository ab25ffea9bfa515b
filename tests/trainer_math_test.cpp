// Loss, schedules and Adam against hand computations and LibTorch's own references.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "metrics/log_window.h"
#include "data/batch.h"
#include "model/kernels/fused_cross_entropy.h"
#include "model/kernels/fused_rdrop_loss.h"
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
  const auto l =
      optim::label_smoothed_loss(logits.to(torch::kFloat32), target, 0, eps, [](const torch::Tensor& h) { return h; });
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
    const auto ours = optim::label_smoothed_loss(logits, target, 0, eps, [](const torch::Tensor& h) { return h; });
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
      const model::kernels::RowLosses rows = model::kernels::fused_label_smoothed_cross_entropy(z.clone(), target, eps);
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
  EXPECT_THROW(model::kernels::fused_label_smoothed_cross_entropy(torch::zeros({2, 4}), target, 0.1),
               c10::Error);  // id 4 of 4
  EXPECT_THROW(model::kernels::fused_label_smoothed_cross_entropy(torch::zeros({2, 4}, torch::kFloat64), target, 0.1),
               c10::Error);
  auto z = torch::zeros({2, 5}).requires_grad_(true);
  EXPECT_THROW(model::kernels::fused_label_smoothed_cross_entropy(z, target, 0.1),
               c10::Error);  // a leaf would be overwritten
  const auto loss = model::kernels::fused_label_smoothed_cross_entropy(z * 1.0, target, 0.1).loss.sum();
  loss.backward({}, /*retain_graph=*/true);
  EXPECT_THROW(loss.backward(), c10::Error);
}

// R-Drop's fused kernel against LibTorch in float64: the cross-entropy as F.cross_entropy
// with label smoothing, the divergence as F.kl_div both ways, and the gradient of a weighted
// sum of all three outputs (what the trainer's sum with alpha is a case of) through autograd.
TEST(Rdrop, FusedKernelMatchesLibTorchCrossEntropyKlDivAndTheirGradient) {
  namespace F = torch::nn::functional;
  torch::manual_seed(5);
  for (int64_t v : {7, 8000, 1003}) {
    const int64_t n = 29;
    // Two nearby predictions (as two dropout masks give), with a large offset and spread.
    const auto first = torch::randn({n, v}) * 6.0 + 40.0;
    const auto base = torch::cat({first, first + torch::randn({n, v}) * 0.7});
    const auto half_target = torch::randint(0, v, {n}, torch::kInt64);
    const auto target = torch::cat({half_target, half_target});
    const auto w_loss = torch::rand({2 * n}), w_div = torch::rand({n}) * 5.0;
    auto z = base.clone().requires_grad_(true);
    const auto rows = model::kernels::fused_rdrop_cross_entropy(z.clone(), target, 0.1);
    ((rows.loss * w_loss).sum() + (rows.divergence * w_div).sum()).backward();

    auto z64 = base.to(torch::kFloat64).requires_grad_(true);
    const auto ce = F::cross_entropy(z64, target, F::CrossEntropyFuncOptions().label_smoothing(0.1).reduction(torch::kNone));
    const auto lp = torch::log_softmax(z64.slice(0, 0, n), -1), lq = torch::log_softmax(z64.slice(0, n), -1);
    const auto kl_p_q = F::kl_div(lq, lp, F::KLDivFuncOptions().reduction(torch::kNone).log_target(true)).sum(-1);
    const auto kl_q_p = F::kl_div(lp, lq, F::KLDivFuncOptions().reduction(torch::kNone).log_target(true)).sum(-1);
    const auto divergence = 0.5 * (kl_p_q + kl_q_p);
    ((ce * w_loss.to(torch::kFloat64)).sum() + (divergence * w_div.to(torch::kFloat64)).sum()).backward();

    EXPECT_TRUE(torch::allclose(rows.loss.to(torch::kFloat64), ce, 1e-5, 1e-4)) << "V " << v;
    EXPECT_TRUE(torch::allclose(rows.divergence.to(torch::kFloat64), divergence, 1e-3, 1e-4))
        << "V " << v << " max diff " << (rows.divergence.to(torch::kFloat64) - divergence).abs().max().item<double>();
    const auto nll = -torch::log_softmax(z64, -1).gather(1, target.unsqueeze(1)).squeeze(1);
    EXPECT_TRUE(torch::allclose(rows.nll.to(torch::kFloat64), nll, 1e-5, 1e-4)) << "V " << v;
    EXPECT_TRUE(torch::allclose(z.grad().to(torch::kFloat64), z64.grad(), 1e-4, 5e-5))
        << "V " << v << " max diff " << (z.grad().to(torch::kFloat64) - z64.grad()).abs().max().item<double>()
        << " max grad " << z64.grad().abs().max().item<double>();
    EXPECT_GT(divergence.min().item<double>(), 0.0);  // the copies differ: the check can fail
  }
}

// With both copies alike (no dropout) the divergence and its gradient vanish and the loss is
// twice the plain loss; LibTorch's reference divergence agrees with the kernel's on differing copies.
TEST(Rdrop, LossOfIdenticalCopiesIsTwiceThePlainLossAndTheReferenceAgrees) {
  torch::manual_seed(6);
  const auto hidden = torch::randn({3, 5, 11});
  auto target = torch::randint(1, 11, {3, 5}, torch::kInt64);
  target[2][4] = 0;
  target[1][3] = 0;
  const auto identity = [](const torch::Tensor& h) { return h; };
  const auto plain = optim::label_smoothed_loss(hidden, target, 0, 0.1, identity);
  auto twice = torch::cat({hidden, hidden}).requires_grad_(true);
  const auto rdrop = optim::rdrop_label_smoothed_loss(twice * 1.0, torch::cat({target, target}), 0, 0.1, 5.0, identity);
  EXPECT_EQ(rdrop.tokens, 2 * plain.tokens);
  EXPECT_NEAR(rdrop.loss.item<double>(), 2 * plain.loss.item<double>(), 1e-4);
  EXPECT_NEAR(rdrop.nll.item<double>(), 2 * plain.nll.item<double>(), 1e-4);
  rdrop.loss.backward();
  // The divergence pulls neither way: each copy's gradient is the plain loss's.
  auto single = hidden.clone().requires_grad_(true);
  optim::label_smoothed_loss(single * 1.0, target, 0, 0.1, identity).loss.backward();
  const auto g = twice.grad();
  EXPECT_TRUE(torch::allclose(g.slice(0, 0, 3), single.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(g.slice(0, 3), single.grad(), 1e-5, 1e-6));

  const auto other = torch::cat({hidden, hidden + torch::randn({3, 5, 11})});
  const auto doubled_target = torch::cat({target, target});
  const auto fused = optim::rdrop_label_smoothed_loss(other, doubled_target, 0, 0.1, 5.0, identity);
  const auto keep = doubled_target.reshape({-1}).ne(0).nonzero().squeeze(1);
  const auto logits = other.reshape({-1, 11}).index_select(0, keep);
  const auto ce = optim::reference_label_smoothed_loss(logits, doubled_target.reshape({-1}).index_select(0, keep), 0.1,
                                                       keep.size(0));
  EXPECT_NEAR(fused.loss.item<double>(), (ce.loss + 5.0 * optim::reference_rdrop_divergence(logits)).item<double>(),
              1e-3);
}

TEST(Rdrop, KernelRejectsOddRowsUnpairedTargetsAndASecondBackward) {
  EXPECT_THROW(model::kernels::fused_rdrop_cross_entropy(torch::zeros({3, 4}), torch::zeros({3}, torch::kInt64), 0.1),
               c10::Error);
  EXPECT_THROW(model::kernels::fused_rdrop_cross_entropy(torch::zeros({2, 4}), torch::tensor({1, 2}), 0.1),
               c10::Error);  // row 1 is not row 0's copy
  auto z = torch::zeros({2, 5}).requires_grad_(true);
  const auto loss = model::kernels::fused_rdrop_cross_entropy(z * 1.0, torch::tensor({1, 1}), 0.1).loss.sum();
  loss.backward({}, /*retain_graph=*/true);
  EXPECT_THROW(loss.backward(), c10::Error);
}

TEST(Rdrop, SecondCopyRepeatsTheRowsAndDoublesTheCounts) {
  data::Batch b;
  b.src = torch::tensor({{5, 6, 2}, {7, 2, 0}});
  b.tgt_in = torch::tensor({{1, 8}, {1, 9}});
  b.tgt_out = torch::tensor({{8, 2}, {9, 2}});
  b.ids = {4, 11};
  b.src_tokens = 5;
  b.tgt_tokens = 4;
  const data::Batch twice = data::with_second_copy(b);
  EXPECT_TRUE(twice.src.equal(torch::tensor({{5, 6, 2}, {7, 2, 0}, {5, 6, 2}, {7, 2, 0}})));
  EXPECT_TRUE(twice.tgt_in.slice(0, 0, 2).equal(b.tgt_in) && twice.tgt_in.slice(0, 2).equal(b.tgt_in));
  EXPECT_TRUE(twice.tgt_out.slice(0, 0, 2).equal(b.tgt_out) && twice.tgt_out.slice(0, 2).equal(b.tgt_out));
  EXPECT_EQ(twice.ids, (std::vector<int64_t>{4, 11, 4, 11}));
  EXPECT_EQ(twice.src_tokens, 10);
  EXPECT_EQ(twice.tgt_tokens, 8);
  // An epoch's tail gives some ranks an empty micro-batch (no tensors): it stays empty.
  EXPECT_TRUE(data::with_second_copy(data::Batch{}).empty());
}

// Values worked out by hand (Python's float arithmetic) for Vaswani et al.'s schedule with
// d_model 512, warmup 4000 and factor 2: the peak at u = 4000 is 2 / sqrt(512 * 4000), twice
// the 6.99e-4 usually quoted for the base Transformer.
TEST(Schedule, NoamRisesToItsPeakAtWarmupThenDecays) {
  config::ScheduleConfig c;
  c.type = config::ScheduleType::kNoam;
  c.factor = 2.0;
  c.warmup_updates = 4000;
  optim::LrSchedule s(c, 512, /*max_updates=*/0);
  EXPECT_NEAR(s.lr(1), 3.493856214843422e-07, 1e-19);
  EXPECT_NEAR(s.lr(10), 3.4938562148434215e-06, 1e-18);
  EXPECT_NEAR(s.lr(3999), 1.3971931003158842e-3, 1e-16);
  EXPECT_NEAR(s.lr(4000), 1.3975424859373686e-3, 1e-16);
  EXPECT_NEAR(s.lr(4001), 1.397367825874706e-3, 1e-16);
  EXPECT_NEAR(s.lr(100000), 2.7950849718747374e-4, 1e-17);
}

// fairseq's inverse_sqrt with lr 1e-3, warmup 100 from 1e-7: 1e-7 + 9.999e-4 * u / 100 up to
// the peak, then 1e-3 * sqrt(100 / u): 5e-4 at u = 400.
TEST(Schedule, InverseSqrtWarmsUpThenDecaysAsOneOverSqrt) {
  config::ScheduleConfig c;
  c.type = config::ScheduleType::kInverseSqrt;
  c.lr = 1e-3;
  c.warmup_updates = 100;
  c.warmup_init_lr = 1e-7;
  optim::LrSchedule s(c, 512, /*max_updates=*/0);
  EXPECT_NEAR(s.lr(1), 1.0099e-5, 1e-18);
  EXPECT_NEAR(s.lr(50), 5.0005e-4, 1e-17);
  EXPECT_NEAR(s.lr(100), 1e-3, 1e-18);
  EXPECT_NEAR(s.lr(400), 5e-4, 1e-18);
  c.type = config::ScheduleType::kConstant;
  EXPECT_EQ(optim::LrSchedule(c, 512, 0).lr(12345), 1e-3);
}

// Values worked out by hand for lr 1e-3, min_lr 1e-5, warmup 100, total 1100 updates:
// t = (u - 100) / 1000; cosine keeps (1 + cos(pi t)) / 2 of the 9.9e-4 above min_lr, linear 1 - t.
TEST(Schedule, CosineAndLinearDecayToMinLrAtTheBudget) {
  config::ScheduleConfig c;
  c.lr = 1e-3;
  c.min_lr = 1e-5;
  c.warmup_updates = 100;
  c.type = config::ScheduleType::kCosine;
  const optim::LrSchedule cosine(c, 512, /*max_updates=*/1100);
  EXPECT_NEAR(cosine.lr(50), 5e-4, 1e-18);                    // warmup from 0: half way
  EXPECT_NEAR(cosine.lr(100), 1e-3, 1e-18);                   // peak
  EXPECT_NEAR(cosine.lr(350), 8.550178566873410e-4, 1e-15);   // t = 1/4: (1 + 0.70710678) / 2 = 0.85355339
  EXPECT_NEAR(cosine.lr(600), 5.05e-4, 1e-15);                // t = 1/2: half of the way down
  EXPECT_NEAR(cosine.lr(1100), 1e-5, 1e-18);                  // the budget's last update
  EXPECT_NEAR(cosine.lr(5000), 1e-5, 1e-18);                  // and beyond (a resumed, extended run)
  c.type = config::ScheduleType::kLinear;
  const optim::LrSchedule linear(c, 512, 1100);
  EXPECT_NEAR(linear.lr(350), 7.525e-4, 1e-15);               // 1e-5 + 9.9e-4 * 0.75
  EXPECT_NEAR(linear.lr(600), 5.05e-4, 1e-15);
  EXPECT_NEAR(linear.lr(1100), 1e-5, 1e-18);
  // schedule.total_updates, when set, wins over the run's budget.
  c.total_updates = 600;
  EXPECT_NEAR(optim::LrSchedule(c, 512, 1100).lr(350), 1e-5 + 9.9e-4 * 0.5, 1e-15);
}

TEST(Adam, MatchesLibTorchAdamW) {
  torch::manual_seed(1);
  auto a = torch::randn({5, 3}).requires_grad_(true);
  auto b = a.detach().clone().requires_grad_(true);
  config::OptimConfig oc;
  oc.weight_decay = 0.01;
  optim::Adam ours({{"w", a}}, oc);
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
  optim::Adam a({{"p", p}}, config::OptimConfig{});
  p.mutable_grad() = torch::ones({4});
  a.step(0.1);
  optim::Adam b({{"p", p}}, config::OptimConfig{});
  b.load_state_dict(a.state_dict());
  EXPECT_TRUE(b.state_dict().at("p").at("exp_avg").equal(a.state_dict().at("p").at("exp_avg")));
  auto q = torch::randn({5}).requires_grad_(true);
  optim::Adam c({{"p", q}}, config::OptimConfig{});
  EXPECT_THROW(c.load_state_dict(a.state_dict()), std::runtime_error);
  optim::Adam d({{"other", p}}, config::OptimConfig{});
  EXPECT_THROW(d.load_state_dict(a.state_dict()), std::runtime_error);
}


// A parameter marked untouched (its layer skipped by LayerDrop on every rank) keeps its value,
// moments and step count, as torch.optim.AdamW leaves a parameter whose .grad is None; the same
// parameter given a zero gradient instead is still moved by its momentum and its weight decay.
TEST(Adam, UntouchedParametersKeepValueMomentsAndStep) {
  torch::manual_seed(3);
  auto skipped = torch::randn({4}).requires_grad_(true);
  auto zeroed = skipped.detach().clone().requires_grad_(true);
  auto reference = skipped.detach().clone().requires_grad_(true);
  config::OptimConfig oc;
  oc.weight_decay = 0.01;
  optim::Adam ours({{"skipped", skipped}, {"zeroed", zeroed}}, oc);
  torch::optim::AdamW ref({reference}, torch::optim::AdamWOptions(1e-2).betas({0.9, 0.98}).eps(1e-9).weight_decay(0.01));
  const auto first_grad = torch::randn({4});
  for (auto* p : {&skipped, &zeroed, &reference}) p->mutable_grad() = first_grad.clone();
  ours.step(1e-2);
  ref.step();
  const auto after_first = skipped.detach().clone();
  const auto moments = ours.state_dict().at("skipped").at("exp_avg").clone();
  // The second update: no backward reached either parameter.
  skipped.mutable_grad() = torch::zeros({4});
  zeroed.mutable_grad() = torch::zeros({4});
  reference.mutable_grad() = torch::Tensor();
  ours.step(1e-2, {true, false});
  ref.step();
  EXPECT_TRUE(skipped.equal(after_first));
  EXPECT_TRUE(ours.state_dict().at("skipped").at("exp_avg").equal(moments));
  EXPECT_EQ(ours.state_dict().at("skipped").at("step").item<double>(), 1.0);
  EXPECT_EQ(ours.state_dict().at("zeroed").at("step").item<double>(), 2.0);
  EXPECT_GT((zeroed - after_first).abs().max().item<double>(), 1e-5);  // moved by momentum alone
  EXPECT_LT((skipped - reference).abs().max().item<double>(), 1e-7);   // PyTorch's None-grad semantics
}
}  // namespace
}  // namespace nmt::trainer

namespace nmt::trainer {
namespace {

TEST(LossScaler, OverflowHalvesCleanStepsGrowAndTheFloorHolds) {
  optim::LossScaler s(/*init_scale=*/4, /*growth_interval=*/3);
  s.clean_step();
  EXPECT_TRUE(s.lower_after_overflow());  // overflow: 4 -> 2, and the clean run starts over
  EXPECT_EQ(s.scale(), 2);
  s.clean_step();
  s.clean_step();
  EXPECT_EQ(s.scale(), 2);
  s.clean_step();  // third clean step in a row: 2 -> 4
  EXPECT_EQ(s.scale(), 4);
  EXPECT_EQ(s.good_steps(), 0);
  EXPECT_TRUE(s.lower_after_overflow());   // 4 -> 2
  EXPECT_TRUE(s.lower_after_overflow());   // 2 -> 1
  EXPECT_FALSE(s.lower_after_overflow());  // 1 is the floor: not an overflow any more
  EXPECT_EQ(s.scale(), 1);
}

// Two applied updates of 100 and 300 target tokens: loss and nll per token over the
// window, the mean gradient norm, and the learning rate of the last applied update.
TEST(LogWindow, AveragesPerTokenAndKeepsTheLastAppliedLr) {
  metrics::LogWindow w;
  EXPECT_TRUE(w.empty());
  w.add(/*loss_sum=*/250.0, /*nll_sum=*/200.0, /*tokens=*/100, /*grad_norm=*/1.0, /*lr=*/1e-3);
  w.add(350.0, 300.0, 300, 3.0, 2e-3);
  const metrics::LogWindow::Summary s = w.close();
  EXPECT_DOUBLE_EQ(s.loss, 1.5);   // 600 / 400
  EXPECT_DOUBLE_EQ(s.nll, 1.25);   // 500 / 400
  EXPECT_DOUBLE_EQ(s.grad_norm, 2.0);
  EXPECT_DOUBLE_EQ(s.lr, 2e-3);
  EXPECT_EQ(s.updates, 2);
  EXPECT_GT(s.tokens_per_s, 0);
  EXPECT_TRUE(w.empty());  // closing starts the next window
}

// At update 40 of 100, 30 of them by this process in 60 s (2 s each): 60 updates, 120 s
// left. A 5-minute limit with 60 s gone leaves 240 s: the earlier end wins.
TEST(LogWindow, EtaIsTheEarlierOfTheUpdateAndTimeBudgets) {
  EXPECT_DOUBLE_EQ(metrics::eta_seconds(100, 0, /*update=*/40, /*first_update=*/10, /*elapsed_s=*/60), 120.0);
  EXPECT_DOUBLE_EQ(metrics::eta_seconds(100, 5, 40, 10, 60), 120.0);
  EXPECT_DOUBLE_EQ(metrics::eta_seconds(1000, 5, 40, 10, 60), 240.0);
  EXPECT_DOUBLE_EQ(metrics::eta_seconds(0, 5, 40, 10, 60), 240.0);
  EXPECT_TRUE(std::isnan(metrics::eta_seconds(0, 0, 40, 10, 60)));
}

}  // namespace
}  // namespace nmt::trainer
