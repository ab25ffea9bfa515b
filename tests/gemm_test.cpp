// The GEMM backends (model/kernels/gemm) against LibTorch's torch::mm, and the oneDNN linear
// layer (model/kernels/linear) against torch::nn::functional::linear, forward and gradients.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "model/kernels/gemm.h"
#include "model/kernels/gemm_plan.h"
#include "model/kernels/linear.h"
#include "model/kernels/timing_operands.h"
#include "model/transformer.h"

namespace nmt::model::kernels {
namespace {

// oneDNN must load wherever setup.sh ran; only AddressSanitizer builds go without it.
#define REQUIRE_ONEDNN()                                                             \
  do {                                                                               \
    if (!onednn_available()) {                                                       \
      if (onednn_unavailable_reason().find("AddressSanitizer") != std::string::npos) \
        GTEST_SKIP() << onednn_unavailable_reason();                                 \
      FAIL() << onednn_unavailable_reason();                                         \
    }                                                                                \
  } while (0)

// Restores the process's backend after a test that changes it.
struct BackendScope {
  GemmBackend saved = gemm_backend();
  explicit BackendScope(GemmBackend b) { set_gemm_backend(b); }
  ~BackendScope() { set_gemm_backend(saved); }
};

// Restores the process's transposed-forward shapes after a test that changes them.
struct PlanScope {
  std::vector<WeightShape> saved = transposed_forward();
  explicit PlanScope(std::vector<WeightShape> plan) { set_transposed_forward(std::move(plan)); }
  ~PlanScope() { set_transposed_forward(saved); }
};

// Restores the process's inference plan after a test that changes it.
struct InferencePlanScope {
  std::vector<WeightShape> saved = inference_transposed();
  explicit InferencePlanScope(std::vector<WeightShape> plan) { set_inference_transposed(std::move(plan)); }
  ~InferencePlanScope() { set_inference_transposed(saved); }
};

float max_relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item<float>();
}

TEST(Gemm, BothBackendsMatchTorchMmForEveryTransposeAndAccumulate) {
  REQUIRE_ONEDNN();
  torch::manual_seed(5);
  const int64_t m = 37, n = 53, k = 71;  // odd sizes: no kernel's tile divides them
  for (GemmBackend backend : {GemmBackend::kMkl, GemmBackend::kOneDnn})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const auto a = ta ? torch::randn({k, m}) : torch::randn({m, k});
        const auto b = tb ? torch::randn({n, k}) : torch::randn({k, n});
        const auto want = torch::mm(ta ? a.t() : a, tb ? b.t() : b);
        auto c = torch::empty({m, n});
        sgemm(backend, a, ta, b, tb, c, /*accumulate=*/false);
        EXPECT_LT(max_relative_error(c, want), 1e-5) << gemm_backend_name(backend) << " ta " << ta << " tb " << tb;
        const auto before = torch::randn({m, n});
        c.copy_(before);
        sgemm(backend, a, ta, b, tb, c, /*accumulate=*/true);
        EXPECT_LT(max_relative_error(c, before + want), 1e-5) << gemm_backend_name(backend) << " accumulate";
      }
}

TEST(Gemm, RowStridedOperandsAndBadShapesAreChecked) {
  REQUIRE_ONEDNN();
  // A column slice of a wider matrix: rows contiguous, leading dimension larger than k.
  const auto wide = torch::randn({20, 40});
  const auto a = wide.slice(1, 5, 25), b = torch::randn({20, 30});
  auto c = torch::empty({20, 30});
  sgemm(GemmBackend::kOneDnn, a, false, b, false, c, false);
  EXPECT_LT(max_relative_error(c, torch::mm(a, b)), 1e-5);
  auto wrong = torch::empty({20, 29});
  EXPECT_THROW(sgemm(GemmBackend::kOneDnn, a, false, b, false, wrong, false), c10::Error);
  auto col_major = torch::empty({30, 20}).t();
  EXPECT_THROW(sgemm(GemmBackend::kOneDnn, a, false, b, false, col_major, false), c10::Error);
}

TEST(Gemm, OneDnnLinearMatchesLibTorchForwardAndGradients) {
  REQUIRE_ONEDNN();
  torch::manual_seed(6);
  for (bool with_bias : {true, false}) {
    const auto x0 = torch::randn({3, 11, 24}), w0 = torch::randn({40, 24}), b0 = torch::randn({40});
    const auto dy = torch::randn({3, 11, 40});
    auto run = [&](GemmBackend backend) {
      BackendScope scope(backend);
      auto x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
      auto y = linear(x, w, with_bias ? b : torch::Tensor());
      y.backward(dy);
      return std::vector<torch::Tensor>{y.detach(), x.grad(), w.grad(), with_bias ? b.grad() : torch::zeros({1})};
    };
    const auto want = run(GemmBackend::kMkl), got = run(GemmBackend::kOneDnn);
    const char* names[] = {"y", "dx", "dw", "db"};
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].sizes(), want[i].sizes()) << names[i];
      EXPECT_LT(max_relative_error(got[i], want[i]), 1e-5) << names[i] << " bias " << with_bias;
    }
  }
}

TEST(Gemm, LinearReluMatchesLibTorchForwardAndGradients) {
  REQUIRE_ONEDNN();
  torch::manual_seed(8);
  // 150 columns: several of the epilogue's 64-column blocks and a partial one.
  for (bool with_bias : {true, false}) {
    const auto x0 = torch::randn({4, 13, 24}), w0 = torch::randn({150, 24}), b0 = torch::randn({150});
    const auto dy = torch::randn({4, 13, 150});
    auto run = [&](GemmBackend backend, bool fused) {
      BackendScope scope(backend);
      auto x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
      const auto bias = with_bias ? b : torch::Tensor();
      auto y = fused ? linear_relu(x, w, bias) : torch::relu(torch::nn::functional::linear(x, w, bias));
      y.backward(dy);
      return std::vector<torch::Tensor>{y.detach(), x.grad(), w.grad(), with_bias ? b.grad() : torch::zeros({1})};
    };
    const auto want = run(GemmBackend::kMkl, false);
    EXPECT_GT(want[0].eq(0).sum().item<int64_t>(), 0) << "some outputs must be cut by the ReLU";
    const auto mkl = run(GemmBackend::kMkl, true), onednn = run(GemmBackend::kOneDnn, true);
    const char* names[] = {"y", "dx", "dw", "db"};
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(torch::equal(mkl[i], want[i]))
          << names[i] << ": LibTorch's path must stay bitwise, bias " << with_bias;
      EXPECT_LT(max_relative_error(onednn[i], want[i]), 1e-5) << names[i] << " bias " << with_bias;
    }
  }
}

// A weight on the transposed-forward plan (gemm_plan.h) computes the same layer: plain and
// fused-ReLU, with and without bias, against LibTorch, and beside a weight off the plan.
TEST(Gemm, TransposedForwardMatchesLibTorchForwardAndGradients) {
  REQUIRE_ONEDNN();
  torch::manual_seed(9);
  const auto x0 = torch::randn({3, 7, 24}), w0 = torch::randn({40, 24}), b0 = torch::randn({40});
  const auto dy = torch::randn({3, 7, 40});
  for (bool relu : {false, true})
    for (bool with_bias : {true, false}) {
      auto run = [&](GemmBackend backend, std::vector<WeightShape> plan) {
        BackendScope scope(backend);
        PlanScope plan_scope(std::move(plan));
        auto x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
        const auto bias = with_bias ? b : torch::Tensor();
        auto y = relu ? linear_relu(x, w, bias) : linear(x, w, bias);
        y.backward(dy);
        return std::vector<torch::Tensor>{y.detach(), x.grad(), w.grad(), with_bias ? b.grad() : torch::zeros({1})};
      };
      const auto want = run(GemmBackend::kMkl, {});
      const auto planned = run(GemmBackend::kOneDnn, {{7, 5}, {40, 24}});
      const auto other_shape_planned = run(GemmBackend::kOneDnn, {{24, 40}});
      const char* names[] = {"y", "dx", "dw", "db"};
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_LT(max_relative_error(planned[i], want[i]), 1e-5)
            << names[i] << " relu " << relu << " bias " << with_bias;
        EXPECT_LT(max_relative_error(other_shape_planned[i], want[i]), 1e-5) << names[i];
      }
    }
}

// The inference plan (decoding): with no gradient recorded, a weight on it is multiplied in its
// kept transposed copy under either library, plain and fused-ReLU, with and without bias and
// with a one-row batch, against LibTorch; a weight changed in place is multiplied as it is now.
// With gradients recorded the plan does not apply, and the gradients are LibTorch's.
TEST(Gemm, InferencePlanMatchesLibTorchUnderBothBackendsAndFollowsWeightChanges) {
  torch::manual_seed(12);
  InferencePlanScope plan({{40, 24}});
  const auto w = torch::randn({40, 24}), b = torch::randn({40});
  for (const GemmBackend backend : {GemmBackend::kMkl, GemmBackend::kOneDnn}) {
    if (backend == GemmBackend::kOneDnn && !onednn_available()) continue;  // AddressSanitizer: MKL's half still runs
    BackendScope scope(backend);
    for (const auto& x : {torch::randn({3, 7, 24}), torch::randn({1, 24})})
      for (bool relu : {false, true})
        for (bool with_bias : {true, false}) {
          const auto bias = with_bias ? b : torch::Tensor();
          auto want = torch::nn::functional::linear(x, w, bias);
          if (relu) want = want.relu();
          torch::NoGradGuard no_grad;
          const auto got = relu ? linear_relu(x, w, bias) : linear(x, w, bias);
          EXPECT_LT(max_relative_error(got, want), 1e-5) << gemm_backend_name(backend) << relu << with_bias;
        }
  }
  const auto x = torch::randn({5, 24});
  auto changing = w.clone();
  {
    torch::NoGradGuard no_grad;
    // the product runs on the kept copy: a copy zeroed behind the cache's back leaves the bias
    linear(x, changing, b);
    kept_transposed_weight(changing).zero_();
    EXPECT_TRUE(torch::equal(linear(x, changing, b), b.expand({5, 40})));
    // the weight changes in place (as between two validations): the copy follows
    changing.mul_(-2.0f);
    EXPECT_LT(max_relative_error(linear(x, changing, b), torch::nn::functional::linear(x, changing, b)), 1e-5);
  }
  // gradients recorded: the plan does not apply, and training's gradients come out
  auto xg = x.clone().requires_grad_(), wg = w.clone().requires_grad_();
  linear(xg, wg, b).sum().backward();
  EXPECT_LT(max_relative_error(wg.grad(), torch::ones({40, 5}).mm(x)), 1e-5);
}

TEST(GemmPlan, KeptTransposedWeightIsMadeOnceAndRemadeWhenTheWeightChanges) {
  auto w = torch::randn({6, 4});
  const auto first = kept_transposed_weight(w);
  EXPECT_TRUE(torch::equal(first, w.t()));
  EXPECT_TRUE(first.is_contiguous());
  EXPECT_EQ(kept_transposed_weight(w).data_ptr(), first.data_ptr()) << "the copy is kept, not made again";
  w.add_(1.0f);  // in place: the version counter moves
  const auto second = kept_transposed_weight(w);
  EXPECT_NE(second.data_ptr(), first.data_ptr());
  EXPECT_TRUE(torch::equal(second, w.t()));
  // a weight that died and a new one: each gets its own copy
  for (int i = 0; i < 3; ++i) {
    const auto fresh = torch::full({6, 4}, static_cast<float>(i));
    EXPECT_TRUE(torch::equal(kept_transposed_weight(fresh), fresh.t())) << i;
  }
}

TEST(GemmPlan, WeightShapesTextRoundTripsAndBadTextIsRefused) {
  const std::vector<WeightShape> shapes{{256, 1024}, {256, 256}};
  EXPECT_EQ(weight_shapes_text(shapes), "256x1024,256x256");
  EXPECT_EQ(parse_weight_shapes("256x1024,256x256"), shapes);
  EXPECT_TRUE(parse_weight_shapes("").empty());
  EXPECT_EQ(weight_shapes_text({}), "");
  for (const char* bad : {"256", "x5", "256x", "256x1024,", ",256x5", "0x5", "-1x5", "abcx1", "256x1024x3", "2 x3"})
    EXPECT_THROW(parse_weight_shapes(bad), std::invalid_argument) << bad;
  try {
    parse_weight_shapes("256x1024,25x");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'25x'"), std::string::npos) << e.what();
  }
}

TEST(GemmPlan, TransformerWeightShapesAreEachDistinctShapeOnce) {
  const std::vector<WeightShape> recipe{{768, 256}, {256, 256}, {512, 256}, {1024, 256}, {256, 1024}, {8000, 256}};
  EXPECT_EQ(transformer_weight_shapes(256, 1024, 8000), recipe);
  // FFN as wide as the fused q/k/v: that shape once
  const std::vector<WeightShape> shared{{768, 256}, {256, 256}, {512, 256}, {256, 768}, {8000, 256}};
  EXPECT_EQ(transformer_weight_shapes(256, 768, 8000), shared);
}

TEST(GemmPlan, TimingBothWaysCoversEveryShape) {
  REQUIRE_ONEDNN();
  const std::vector<WeightShape> shapes{{48, 32}, {32, 96}};
  for (const GemmBackend backend : {GemmBackend::kOneDnn, GemmBackend::kMkl})
    for (const TransposedCopy copy : {TransposedCopy::kEachCall, TransposedCopy::kOnce}) {
      const auto timings = time_forward_both_ways(shapes, 64, 0.01, copy, backend);
      ASSERT_EQ(timings.size(), shapes.size());
      for (size_t i = 0; i < shapes.size(); ++i) {
        EXPECT_EQ(timings[i].shape, shapes[i]);
        EXPECT_GT(timings[i].as_stored_s, 0);
        EXPECT_GT(timings[i].transposed_s, 0);
      }
    }
  // faster_transposed keeps exactly the shapes whose copy won by the margin
  const std::vector<ForwardTiming> made_up{{{1, 2}, 2.0, 1.0}, {{3, 4}, 1.0, 1.0}, {{5, 6}, 1.04, 1.0}};
  EXPECT_EQ(faster_transposed(made_up, 1.05), (std::vector<WeightShape>{{1, 2}}));
}

// Decoding's last sentence: one row. contiguous() of a one-row expand of the bias is the bias
// itself; the product once went into it, overwriting the parameter (greedy decoding then
// printed "a a a ..." for the sentences after).
TEST(Gemm, OneRowLeavesTheBiasAloneAndMatchesLibTorch) {
  REQUIRE_ONEDNN();
  torch::NoGradGuard no_grad;
  const auto w = torch::randn({40, 24}), b = torch::randn({40}), before = b.clone();
  for (const auto& x : {torch::randn({1, 1, 24}), torch::randn({1, 24}), torch::randn({3, 24}).slice(0, 1, 2)}) {
    BackendScope scope(GemmBackend::kOneDnn);
    const auto y = linear(x, w, b);
    EXPECT_TRUE(torch::equal(b, before)) << "the bias changed";
    EXPECT_LT(max_relative_error(y, torch::nn::functional::linear(x, w, b)), 1e-5);
  }
}

TEST(Gemm, TransformerOnOneDnnMatchesMklLossAndGradients) {
  REQUIRE_ONEDNN();
  ModelConfig c;
  c.vocab_size = 50, c.d_model = 32, c.ffn_dim = 64, c.heads = 4, c.encoder_layers = 2, c.decoder_layers = 2;
  c.dropout = 0;
  torch::manual_seed(7);
  Transformer model(c);
  const auto src = torch::randint(4, 50, {3, 9}), tgt = torch::randint(4, 50, {3, 7});
  auto loss_and_grads = [&](GemmBackend backend) {
    BackendScope scope(backend);
    model->zero_grad();
    auto logits = model->forward(src, tgt);
    auto loss = torch::nn::functional::cross_entropy(
        logits.reshape({-1, 50}), torch::randint(4, 50, {21}, torch::Generator(at::detail::createCPUGenerator(3))));
    loss.backward();
    std::vector<torch::Tensor> out{loss.detach()};
    for (const auto& p : model->parameters()) out.push_back(p.grad().clone());
    return out;
  };
  const auto want = loss_and_grads(GemmBackend::kMkl), got = loss_and_grads(GemmBackend::kOneDnn);
  EXPECT_LT(max_relative_error(got[0], want[0]), 1e-5) << "loss";
  for (size_t i = 1; i < want.size(); ++i) EXPECT_LT(max_relative_error(got[i], want[i]), 1e-4) << "parameter " << i;
}

TEST(Gemm, MeasuringLeavesTheDefaultGeneratorAlone) {
  REQUIRE_ONEDNN();
  torch::manual_seed(8);
  const auto expected = torch::randn({4});
  torch::manual_seed(8);
  const GemmChoice choice = fastest_gemm_backend(transformer_gemm_shapes(64, 32, 64, 100), 0.05);
  EXPECT_GT(choice.mkl_flops_per_s, 0);
  EXPECT_GT(choice.onednn_flops_per_s, 0);
  EXPECT_TRUE(torch::equal(torch::randn({4}), expected));           // training's seeded stream is untouched
  EXPECT_EQ(transformer_gemm_shapes(64, 32, 64, 100).size(), 15u);  // 5 weights x (forward, dx, dW)
}

// The timings at start hold one buffer per operand, as large as its largest use: every
// product's operands are views of it in the product's layout, and the bf16 copies are the same
// values rounded.
TEST(Gemm, TimingOperandsShareOneBufferPerOperandInEachProductsLayout) {
  const auto shapes = transformer_gemm_shapes(48, 16, 32, 100);  // largest: the [48, 100] logits and their gradient
  const TimingOperands ops(shapes, /*with_bf16=*/true);
  std::set<const void*> buffers;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& s = shapes[i];
    const ProductOperands& o = ops[i];
    EXPECT_EQ(o.a.sizes(), (s.trans_a ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k}));
    EXPECT_EQ(o.b.sizes(), (s.trans_b ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n}));
    EXPECT_EQ(o.c.sizes(), (std::vector<int64_t>{s.m, s.n}));
    EXPECT_TRUE(o.a.is_contiguous() && o.b.is_contiguous() && o.c.is_contiguous());
    buffers.insert({o.a.data_ptr(), o.b.data_ptr(), o.c.data_ptr()});
    EXPECT_TRUE(torch::equal(o.a16, o.a.to(torch::kBFloat16)));
    EXPECT_TRUE(torch::equal(o.b16, o.b.to(torch::kBFloat16)));
  }
  EXPECT_EQ(buffers.size(), 3u);  // one per operand, not one per product; a product never writes what it reads
  EXPECT_GT(ops[0].a.std().item<double>(), 0.5);  // random normal values, not zeros
  EXPECT_FALSE(TimingOperands(shapes, false)[0].a16.defined());
  EXPECT_THROW(ops[shapes.size()], std::out_of_range);
}

}  // namespace
}  // namespace nmt::model::kernels
