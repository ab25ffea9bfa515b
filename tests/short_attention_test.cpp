// The short-sequence attention kernel (model/kernels/short_attention) against LibTorch's
// scaled_dot_product_attention: outputs and gradients, self- and cross-attention, every
// mask the model makes, lengths on both sides of the kernel's 16-wide blocks; then a whole
// Transformer's loss and gradients under both kernels.
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/attention.h"
#include "model/kernels/short_attention.h"
#include "model/transformer.h"

namespace nmt::model {
namespace {

struct KernelScope {
  kernels::AttentionKernel saved = kernels::attention_kernel();
  explicit KernelScope(kernels::AttentionKernel k) { kernels::set_attention_kernel(k); }
  ~KernelScope() { kernels::set_attention_kernel(saved); }
};

float max_relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item<float>();
}

torch::Tensor heads_of(const torch::Tensor& x, int64_t heads) {  // [B, T, H D] -> [B, H, T, D]
  return x.reshape({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
}

// LibTorch's attention on the same operands: [B, Tq, H D].
torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask, int64_t heads) {
  auto o = at::scaled_dot_product_attention(heads_of(q, heads), heads_of(k, heads), heads_of(v, heads),
                                            mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt);
  return o.transpose(1, 2).reshape({q.size(0), q.size(1), q.size(2)});
}

torch::Tensor lengths_mask(const std::vector<int64_t>& lengths, int64_t len) {  // [B, 1, 1, len]
  auto m = torch::zeros({static_cast<int64_t>(lengths.size()), 1, 1, len}, torch::kBool);
  for (size_t b = 0; b < lengths.size(); ++b) m[static_cast<int64_t>(b)].narrow(-1, 0, lengths[b]).fill_(true);
  return m;
}

struct Case {
  int64_t batch, tq, tk, d_model, heads;
  const char* mask;  // "none", "padding", "causal+padding"
};

class SelfAttentionVsSdpa : public ::testing::TestWithParam<Case> {};

TEST_P(SelfAttentionVsSdpa, OutputAndGradientMatch) {
  const Case c = GetParam();
  torch::manual_seed(11);
  const auto qkv = torch::randn({c.batch, c.tq, 3 * c.d_model}).requires_grad_(true);
  std::vector<int64_t> lengths;
  for (int64_t b = 0; b < c.batch; ++b) lengths.push_back(std::max<int64_t>(1, c.tq - 3 * b));
  torch::Tensor mask;
  if (std::string(c.mask) == "padding") mask = lengths_mask(lengths, c.tq);
  if (std::string(c.mask) == "causal+padding") mask = causal_mask(c.tq, torch::kCPU) & lengths_mask(lengths, c.tq);
  const auto dout = torch::randn({c.batch, c.tq, c.d_model});

  const auto got = kernels::short_self_attention(qkv, mask, c.heads);
  const auto got_grad = torch::autograd::grad({got}, {qkv}, {dout})[0];
  const auto parts = qkv.chunk(3, -1);
  const auto want = reference(parts[0], parts[1], parts[2], mask, c.heads);
  const auto want_grad = torch::autograd::grad({want}, {qkv}, {dout})[0];
  EXPECT_LT(max_relative_error(got, want), 2e-6) << "output";
  EXPECT_LT(max_relative_error(got_grad, want_grad), 2e-5) << "d qkv";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SelfAttentionVsSdpa,
    ::testing::Values(Case{2, 5, 5, 64, 4, "none"}, Case{3, 16, 16, 64, 2, "padding"}, Case{4, 19, 19, 64, 4, "padding"},
                      Case{3, 23, 23, 128, 4, "causal+padding"}, Case{2, 37, 37, 64, 1, "causal+padding"},
                      Case{5, 1, 1, 32, 2, "causal+padding"}, Case{2, 70, 70, 256, 4, "padding"}));

TEST(ShortAttention, CrossAttentionOutputAndGradientsMatchSdpa) {
  for (auto [tq, tk] : {std::pair<int64_t, int64_t>{7, 19}, {21, 5}, {1, 33}, {16, 16}}) {
    torch::manual_seed(5);
    const int64_t batch = 3, d = 64, heads = 4;
    const auto q = torch::randn({batch, tq, d}).requires_grad_(true);
    const auto kv = torch::randn({batch, tk, 2 * d}).requires_grad_(true);
    const auto mask = lengths_mask({tk, std::max<int64_t>(1, tk - 4), 1}, tk);
    const auto dout = torch::randn({batch, tq, d});
    const auto got = kernels::short_cross_attention(q, kv, mask, heads);
    const auto got_grads = torch::autograd::grad({got}, {q, kv}, {dout});
    const auto parts = kv.chunk(2, -1);
    const auto want = reference(q, parts[0], parts[1], mask, heads);
    const auto want_grads = torch::autograd::grad({want}, {q, kv}, {dout});
    EXPECT_LT(max_relative_error(got, want), 2e-6) << "output, tq " << tq << " tk " << tk;
    EXPECT_LT(max_relative_error(got_grads[0], want_grads[0]), 2e-5) << "dq, tq " << tq << " tk " << tk;
    EXPECT_LT(max_relative_error(got_grads[1], want_grads[1]), 2e-5) << "dkv, tq " << tq << " tk " << tk;
  }
}

TEST(ShortAttention, RowStridedViewsAreReadWhereTheyLie) {
  // The projections hand over slices of wider rows: a qkv view inside a [B, T, 5 d] tensor.
  torch::manual_seed(2);
  const auto wide = torch::randn({2, 9, 5 * 32});
  const auto qkv = wide.narrow(2, 32, 3 * 32);
  const auto parts = qkv.chunk(3, -1);
  const auto mask = lengths_mask({9, 6}, 9);
  EXPECT_LT(
      max_relative_error(kernels::short_self_attention(qkv, mask, 2), reference(parts[0], parts[1], parts[2], mask, 2)),
      2e-6);
}

TEST(ShortAttention, QueryWithNoKeyGetsZerosAndNoGradient) {
  const auto q = torch::randn({1, 3, 32}).requires_grad_(true);
  const auto kv = torch::randn({1, 4, 64}).requires_grad_(true);
  auto mask = torch::ones({1, 1, 3, 4}, torch::kBool);
  mask.index_put_({0, 0, 1}, false);  // query 1 sees nothing
  const auto out = kernels::short_cross_attention(q, kv, mask, 2);
  EXPECT_EQ(out[0][1].abs().sum().item<float>(), 0.0f);
  const auto grads = torch::autograd::grad({out}, {q, kv}, {torch::ones_like(out)});
  EXPECT_EQ(grads[0][0][1].abs().sum().item<float>(), 0.0f);
}

TEST(ShortAttention, AppliesOnlyWhereItCan) {
  KernelScope scope(kernels::AttentionKernel::kShort);
  const auto x = torch::randn({2, 5, 64});
  EXPECT_TRUE(kernels::use_short_attention(x, 64, 4, 5, 0.0));
  EXPECT_FALSE(kernels::use_short_attention(x, 64, 8, 5, 0.0)) << "head dim 8 is not a multiple of 16";
  EXPECT_FALSE(kernels::use_short_attention(x, 64, 4, 5, 0.1)) << "attention dropout";
  EXPECT_FALSE(kernels::use_short_attention(x, 64, 4, 513, 0.0)) << "too many keys";
  EXPECT_FALSE(kernels::use_short_attention(x.to(torch::kBFloat16), 64, 4, 5, 0.0)) << "bf16 (autocast)";
  kernels::set_attention_kernel(kernels::AttentionKernel::kSdpa);
  EXPECT_FALSE(kernels::use_short_attention(x, 64, 4, 5, 0.0)) << "not chosen";
}

TEST(ShortAttention, TransformerLossAndGradientsMatchSdpa) {
  for (bool pre_norm : {false, true}) {
    ModelConfig c;
    c.vocab_size = 50, c.d_model = 64, c.ffn_dim = 96, c.heads = 4, c.encoder_layers = 2, c.decoder_layers = 2;
    c.dropout = 0, c.pre_norm = pre_norm;
    torch::manual_seed(7);
    Transformer model(c);
    auto src = torch::randint(4, 50, {3, 11}), tgt = torch::randint(4, 50, {3, 8});
    src.index_put_({2, torch::indexing::Slice(7)}, 0);  // padding on both sides
    tgt.index_put_({1, torch::indexing::Slice(5)}, 0);
    const auto target = torch::randint(4, 50, {24}, torch::Generator(at::detail::createCPUGenerator(3)));
    auto loss_and_grads = [&](kernels::AttentionKernel kernel) {
      KernelScope scope(kernel);
      model->zero_grad();
      auto logits = model->forward(src, tgt);
      auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, 50}), target);
      loss.backward();
      std::vector<torch::Tensor> out{loss.detach()};
      for (const auto& p : model->parameters()) out.push_back(p.grad().clone());
      return out;
    };
    const auto want = loss_and_grads(kernels::AttentionKernel::kSdpa),
               got = loss_and_grads(kernels::AttentionKernel::kShort);
    EXPECT_LT(max_relative_error(got[0], want[0]), 1e-5) << "loss, pre_norm " << pre_norm;
    for (size_t i = 1; i < want.size(); ++i)
      EXPECT_LT(max_relative_error(got[i], want[i]), 1e-4) << "parameter " << i << ", pre_norm " << pre_norm;
  }
}

TEST(ShortAttention, Bf16AutocastTakesTheGeneralKernel) {
  // Under CPU autocast the projections come out bf16 while the layer's input is float32: the
  // choice must follow the projections (it once followed q and handed bf16 to the kernel).
  KernelScope scope(kernels::AttentionKernel::kShort);
  ModelConfig c;
  c.vocab_size = 50, c.d_model = 64, c.ffn_dim = 96, c.heads = 4, c.encoder_layers = 1, c.decoder_layers = 1;
  c.dropout = 0, c.pre_norm = true;
  torch::manual_seed(7);
  Transformer model(c);
  const auto src = torch::randint(4, 50, {2, 6}), tgt = torch::randint(4, 50, {2, 5});
  const bool was = at::autocast::is_autocast_enabled(at::kCPU);
  const auto dtype = at::autocast::get_autocast_dtype(at::kCPU);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  torch::Tensor loss;
  EXPECT_NO_THROW(loss = model->forward(src, tgt).to(torch::kFloat32).logsumexp(-1).mean());
  at::autocast::set_autocast_enabled(at::kCPU, was);
  at::autocast::set_autocast_dtype(at::kCPU, dtype);
  at::autocast::clear_cache();
  ASSERT_TRUE(loss.defined());
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item<float>()));
}

}  // namespace
}  // namespace nmt::model
