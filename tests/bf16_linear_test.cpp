// kernels::linear and linear_relu under bf16 products, against LibTorch's fp32 linear on the
// same inputs, outputs and all three gradients. Rounding x, W and dy to bf16 (8 significant
// bits, unit roundoff u = 2^-8) moves each product term by at most (2u + u^2) of its size, and
// fp32 sums add k 2^-23: so |bf16 - fp32| <= (2u + u^2 + k 2^-23) (|A| |B|) elementwise, for
// each of y = x W^T, dx = dy W and dW = dy^T x. The bias gradient is summed in fp32 (exact up
// to fp32 order).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <optional>
#include <vector>

#include "model/kernels/bf16_gemm.h"
#include "model/kernels/gemm_plan.h"
#include "model/kernels/linear.h"

namespace k = nmt::model::kernels;

namespace {

struct Bf16Decoding {  // decoding's bf16 products, set for a test, fp32 again after it
  Bf16Decoding() { k::set_inference_precision(k::LinearPrecision::kBf16); }
  ~Bf16Decoding() { k::set_inference_precision(k::LinearPrecision::kFp32); }
};

struct Bf16Products {  // set for a test, fp32 again after it
  Bf16Products() { k::set_linear_precision(k::LinearPrecision::kBf16); }
  ~Bf16Products() { k::set_linear_precision(k::LinearPrecision::kFp32); }
};

double bound_factor(int64_t terms) { return 2 * std::ldexp(1.0, -8) + std::ldexp(1.0, -16) + terms * std::ldexp(1.0, -23); }

// Largest amount by which |got - want| exceeds the bound (<= 0 passes).
double excess(const torch::Tensor& got, const torch::Tensor& want, const torch::Tensor& abs_product, int64_t terms) {
  return ((got - want).abs() - abs_product * bound_factor(terms) - 1e-7).max().item<double>();
}

// A layer's inputs with gradients, and the upstream gradient, seeded.
struct LayerInputs {
  torch::Tensor x, w, b, dy;
  LayerInputs(uint64_t seed, int64_t rows, int64_t in, int64_t out) {
    torch::manual_seed(seed);
    x = torch::randn({rows, in}, torch::requires_grad());
    w = torch::randn({out, in}, torch::requires_grad());
    b = torch::randn({out}, torch::requires_grad());
    dy = torch::randn({rows, out});
  }
};

}  // namespace

TEST(Bf16Linear, OutputAndGradientsWithinBf16RoundingOfFp32) {
  if (!k::bf16_gemm_problem().empty()) GTEST_SKIP() << k::bf16_gemm_problem();
  const int64_t rows = 37, in = 48, out = 24;
  const LayerInputs inputs(3, rows, in, out);
  auto x = inputs.x, w = inputs.w, b = inputs.b;
  const auto dy = inputs.dy;
  torch::Tensor y16;
  {
    Bf16Products bf16;
    y16 = k::linear(x.view({1, rows, in}), w, b).view({rows, out});
  }
  y16.backward(dy);
  const auto dx16 = x.grad().clone(), dw16 = w.grad().clone(), db16 = b.grad().clone();
  x.grad().zero_(), w.grad().zero_(), b.grad().zero_();
  const auto y32 = torch::nn::functional::linear(x, w, b);
  y32.backward(dy);
  const auto ax = x.detach().abs(), aw = w.detach().abs(), ady = dy.abs();
  EXPECT_LE(excess(y16, y32, torch::mm(ax, aw.t()), in), 0.0) << "y";
  EXPECT_LE(excess(dx16, x.grad(), torch::mm(ady, aw), out), 0.0) << "dx";
  EXPECT_LE(excess(dw16, w.grad(), torch::mm(ady.t(), ax), rows), 0.0) << "dW";
  EXPECT_TRUE(torch::allclose(db16, b.grad(), 1e-5, 1e-5)) << "db";
  // Not fp32 by accident: bf16 rounding shows in the output.
  EXPECT_GT((y16 - y32).abs().max().item<double>(), 1e-4);
}

TEST(Bf16Linear, ReluLayerMasksByItsOwnOutput) {
  if (!k::bf16_gemm_problem().empty()) GTEST_SKIP() << k::bf16_gemm_problem();
  const int64_t rows = 29, in = 32, out = 40;
  const LayerInputs inputs(4, rows, in, out);
  auto x = inputs.x, w = inputs.w, b = inputs.b;
  const auto dy = inputs.dy;
  torch::Tensor y16;
  {
    Bf16Products bf16;
    y16 = k::linear_relu(x, w, b);
  }
  y16.backward(dy);
  const auto pre32 = torch::nn::functional::linear(x.detach(), w.detach(), b.detach());
  const auto bound = torch::mm(x.detach().abs(), w.detach().abs().t()) * bound_factor(in) + 1e-7;
  EXPECT_LE(((y16 - pre32.relu()).abs() - bound).max().item<double>(), 0.0) << "relu(y)";
  // The gradient reaches exactly the units whose bf16 output is positive.
  const auto mask = (y16.detach() > 0).to(torch::kFloat32);
  const auto g = dy * mask;
  EXPECT_TRUE(torch::allclose(b.grad(), g.sum(0), 1e-5, 1e-5)) << "db";
  const auto dw_want = torch::mm(g.t(), x.detach());
  EXPECT_LE(excess(w.grad(), dw_want, torch::mm(g.abs().t(), x.detach().abs()), rows), 0.0) << "dW";
}

TEST(Bf16Linear, NoGradientRecordedStaysFp32) {
  if (!k::bf16_gemm_problem().empty()) GTEST_SKIP() << k::bf16_gemm_problem();
  torch::manual_seed(5);
  const auto x = torch::randn({9, 16}), w = torch::randn({8, 16}), b = torch::randn({8});
  torch::NoGradGuard no_grad;
  Bf16Products bf16;
  EXPECT_TRUE(torch::equal(k::linear(x, w, b), torch::nn::functional::linear(x, w, b)));
}

// Decoding's bf16 products (translate, evaluate): with no gradient recorded, linear and
// linear_relu multiply bf16(x) by a kept bf16 copy of W, within bf16's rounding of fp32; the
// copy is made once and made again after the weight changes; with a gradient recorded (a
// training step in the same process) nothing changes.
TEST(Bf16Linear, DecodingProductsOnAKeptBf16CopyWithinRoundingOfFp32) {
  if (!k::bf16_gemm_problem().empty()) GTEST_SKIP() << k::bf16_gemm_problem();
  torch::manual_seed(6);
  const int64_t rows = 12, in = 64, out = 40;
  const auto x = torch::randn({3, rows / 3, in}), w = torch::randn({out, in}), b = torch::randn({out});
  Bf16Decoding bf16;
  {
    torch::NoGradGuard no_grad;
    const auto y32 = torch::nn::functional::linear(x, w, b);
    const auto y16 = k::linear(x, w, b);
    ASSERT_EQ(y16.sizes(), y32.sizes());
    const auto bound = torch::matmul(x.abs(), w.abs().t()) * bound_factor(in) + 1e-7;
    EXPECT_LE(((y16 - y32).abs() - bound).max().item<double>(), 0.0) << "y";
    EXPECT_GT((y16 - y32).abs().max().item<double>(), 1e-4) << "fp32 by accident";
    EXPECT_LE(((k::linear_relu(x, w, b) - y32.relu()).abs() - bound).max().item<double>(), 0.0) << "relu(y)";
    const auto kept = k::kept_bf16_weight(w);
    EXPECT_EQ(kept.scalar_type(), torch::kBFloat16);
    EXPECT_EQ(k::kept_bf16_weight(w).const_data_ptr(), kept.const_data_ptr()) << "made again unchanged";
    EXPECT_TRUE(kept.equal(w.to(torch::kBFloat16)));
    w.mul_(2);  // in place: the version counter moves
    EXPECT_TRUE(k::kept_bf16_weight(w).equal(w.to(torch::kBFloat16))) << "stale after an in-place change";
  }
  const auto xg = x.clone().requires_grad_();
  EXPECT_TRUE(torch::equal(k::linear(xg, w, b), torch::nn::functional::linear(xg, w, b))) << "training changed";
}

// The FFN under bf16 products is one function keeping the hidden layer only in bf16: it must
// compute exactly what the two bf16 layers compute apart (each checked against LibTorch's fp32
// above), the output and all five gradients bit for bit; and with fp32 products it is the two
// layers themselves.
TEST(Bf16Linear, FusedFeedForwardEqualsItsTwoLayers) {
  if (!k::bf16_gemm_problem().empty()) GTEST_SKIP() << k::bf16_gemm_problem();
  const int64_t rows = 45, d = 32, ffn = 72;
  for (const bool bf16_products : {true, false}) {
    torch::manual_seed(6);
    const auto x0 = torch::randn({3, rows / 3, d}), w10 = torch::randn({ffn, d}), b10 = torch::randn({ffn}),
               w20 = torch::randn({d, ffn}) * 0.2, b20 = torch::randn({d}), dy = torch::randn({3, rows / 3, d});
    std::vector<std::vector<torch::Tensor>> results;
    for (const bool fused : {true, false}) {
      auto x = x0.clone().requires_grad_(), w1 = w10.clone().requires_grad_(), b1 = b10.clone().requires_grad_(),
           w2 = w20.clone().requires_grad_(), b2 = b20.clone().requires_grad_();
      torch::Tensor y;
      {
        std::optional<Bf16Products> bf16;
        if (bf16_products) bf16.emplace();
        y = fused ? k::feed_forward(x, w1, b1, w2, b2) : k::linear(k::linear_relu(x, w1, b1), w2, b2);
      }
      y.backward(dy);
      results.push_back({y.detach(), x.grad(), w1.grad(), b1.grad(), w2.grad(), b2.grad()});
    }
    const char* names[] = {"y", "dx", "dW1", "db1", "dW2", "db2"};
    for (size_t i = 0; i < results[0].size(); ++i)
      EXPECT_TRUE(torch::equal(results[0][i], results[1][i])) << names[i] << (bf16_products ? " (bf16)" : " (fp32)");
  }
}

// Decoding's FFN under bf16 products hands fc1's hidden layer to fc2 as bf16 from fc1's epilogue:
// the same output, bit for bit, as the two decoding layers apart (fc1's fp32 output cast for fc2).
TEST(Bf16Linear, DecodingFeedForwardEqualsItsTwoLayers) {
  if (!k::bf16_gemm_problem().empty()) GTEST_SKIP() << k::bf16_gemm_problem();
  torch::manual_seed(8);
  const auto x = torch::randn({5, 7, 32}), w1 = torch::randn({72, 32}), b1 = torch::randn({72}),
             w2 = torch::randn({32, 72}) * 0.2, b2 = torch::randn({32});
  Bf16Decoding bf16;
  torch::NoGradGuard no_grad;
  const auto fused = k::feed_forward(x, w1, b1, w2, b2);
  EXPECT_TRUE(torch::equal(fused, k::linear(k::linear_relu(x, w1, b1), w2, b2)));
  const auto y32 = torch::nn::functional::linear(torch::relu(torch::nn::functional::linear(x, w1, b1)), w2, b2);
  EXPECT_GT((fused - y32).abs().max().item<double>(), 1e-4) << "fp32 by accident";
}
