// The decoding step's attention kernel (model/kernels/decode_attention) against LibTorch's
// scaled_dot_product_attention, on the layouts decoding hands it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/kernels/decode_attention.h"

namespace nmt::model {
namespace {

// LibTorch's result in the kernel's layout: [B, H, Tq, D] -> [B, Tq, H * D].
torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& mask) {
  const torch::Tensor o = at::scaled_dot_product_attention(q, k, v, mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt);
  return o.transpose(1, 2).reshape({q.size(0), q.size(2), q.size(1) * q.size(3)});
}

TEST(DecodeAttention, MatchesScaledDotProductAttentionOnHeadViewsAndCacheSlices) {
  torch::manual_seed(11);
  torch::NoGradGuard no_grad;
  const int64_t batch = 7, heads = 4;
  // 64 and 32: the head widths the kernel is compiled for; 48 and 24 take its run-time width
  // (48: whole vectors of either ISA; 24: a remainder under AVX-512).
  for (int64_t d : {64, 32, 48, 24})
    for (int64_t tq : {1, 5})
      for (int64_t tk : {1, 13, 40}) {
        // q as the head view of a [B, Tq, H * D] projection (strided), k and v as slices of a
        // longer cache, as decoding passes them.
        const torch::Tensor q = torch::randn({batch, tq, heads * d}).view({batch, tq, heads, d}).transpose(1, 2);
        const torch::Tensor k = torch::randn({batch, heads, tk + 6, d}).slice(2, 0, tk);
        const torch::Tensor v = torch::randn({batch, heads, tk + 6, d}).slice(2, 0, tk);
        const torch::Tensor got = kernels::decode_attention(q, k, v, torch::Tensor());
        EXPECT_LT((got - reference(q, k, v, torch::Tensor())).abs().max().item<float>(), 2e-6)
            << "d " << d << ", " << tq << " x " << tk;
        // A padding mask over the keys: each sentence keeps its first `len` keys.
        torch::Tensor mask = torch::zeros({batch, 1, 1, tk}, torch::kBool);
        for (int64_t b = 0; b < batch; ++b) mask[b].slice(-1, 0, 1 + (b * 5) % tk).fill_(true);
        const torch::Tensor masked = kernels::decode_attention(q, k, v, mask);
        EXPECT_LT((masked - reference(q, k, v, mask)).abs().max().item<float>(), 2e-6)
            << "d " << d << ", " << tq << " x " << tk << " masked";
      }
}

// Keys stay where each step wrote them; row r reads step s's keys from slot row
// history[r][s]. The reference gathers each row's keys into [rows, steps, d] first.
void expect_self_attention_follows_the_ancestor_table(int64_t d) {
  const int64_t rows = 9, slot_rows = 12, heads = 4, steps = 7, capacity = 16;
  const torch::Tensor k = torch::randn({capacity, slot_rows, heads * d}),
                      v = torch::randn({capacity, slot_rows, heads * d});
  const torch::Tensor history = torch::randint(0, slot_rows, {rows, steps}, torch::kInt32);
  // q as a slice of a fused [rows, 3 * H * D] projection.
  const torch::Tensor q = torch::randn({rows, 3 * heads * d}).narrow(1, 0, heads * d);
  const torch::Tensor when = torch::arange(steps).unsqueeze(0), from = history.to(torch::kInt64);
  auto heads_of = [&](const torch::Tensor& x) { return x.view({rows, -1, heads, d}).transpose(1, 2); };
  const torch::Tensor want = reference(heads_of(q.reshape({rows, 1, heads * d})), heads_of(k.index({when, from})),
                                       heads_of(v.index({when, from})), torch::Tensor())
                                 .reshape({rows, heads * d});
  const torch::Tensor got = kernels::decode_self_attention(q, k, v, history, heads);
  EXPECT_LT((got - want).abs().max().item<float>(), 2e-6);
  EXPECT_THROW(kernels::decode_self_attention(q, k, v, history.to(torch::kInt64), heads), c10::Error)
      << "int64 table refused";
  EXPECT_THROW(kernels::decode_self_attention(q, k.narrow(0, 0, 5), v.narrow(0, 0, 5), history, heads), c10::Error)
      << "more steps than the buffer holds";
}

TEST(DecodeAttention, SelfAttentionFollowsTheAncestorTable) {
  torch::manual_seed(4);
  torch::NoGradGuard no_grad;
  for (int64_t d : {64, 32}) expect_self_attention_follows_the_ancestor_table(d);
}

// Sentences that finished leave a decoding batch as rows of a table: query row b reads the
// keys, values and mask of row rows[b], bit for bit what it reads once those rows are copied
// out (index_select), and against LibTorch's kernel on the copies.
TEST(DecodeAttention, RowTableReadsTheRowsItNamesAsACopyOfThemWould) {
  torch::manual_seed(5);
  torch::NoGradGuard no_grad;
  const int64_t sentences = 9, heads = 4, d = 32, tk = 11;
  const torch::Tensor k = torch::randn({sentences, tk, heads * d}).view({sentences, tk, heads, d}).transpose(1, 2);
  const torch::Tensor v = torch::randn({sentences, tk, heads * d}).view({sentences, tk, heads, d}).transpose(1, 2);
  torch::Tensor mask = torch::zeros({sentences, 1, 1, tk}, torch::kBool);
  for (int64_t s = 0; s < sentences; ++s) mask[s].slice(-1, 0, 1 + (s * 4) % tk).fill_(true);
  const torch::Tensor rows = torch::tensor({7, 0, 3, 8}, torch::kInt64);  // the live sentences, in order
  for (int64_t tq : {1, 5}) {  // greedy; a sentence's 5 beams
    const torch::Tensor q = torch::randn({rows.size(0), tq, heads * d}).view({rows.size(0), tq, heads, d}).transpose(1, 2);
    const torch::Tensor live_k = k.index_select(0, rows), live_v = v.index_select(0, rows),
                        live_mask = mask.index_select(0, rows);
    const torch::Tensor got = kernels::decode_attention(q, k, v, mask, rows);
    EXPECT_TRUE(got.equal(kernels::decode_attention(q, live_k, live_v, live_mask))) << tq << " queries";
    EXPECT_LT((got - reference(q, live_k, live_v, live_mask)).abs().max().item<float>(), 2e-6) << tq << " queries";
  }
  const torch::Tensor q = torch::randn({4, heads, 1, d});
  EXPECT_THROW(kernels::decode_attention(q, k, v, mask, torch::tensor({7, 0, 3, 9}, torch::kInt64)), c10::Error)
      << "a row past the key rows";
  EXPECT_THROW(kernels::decode_attention(q, k, v, mask, torch::tensor({7, 0, 3}, torch::kInt64)), c10::Error)
      << "a table shorter than the queries";
  EXPECT_THROW(kernels::decode_attention(q, k, v, mask, torch::tensor({7, 0, 3, 8}, torch::kInt32)), c10::Error)
      << "int32 table refused";
  EXPECT_THROW(kernels::decode_attention(q, k, v, mask), c10::Error) << "4 query rows against 9 key rows, no table";
}

TEST(DecodeAttention, LargeScoresStayFiniteAndAllMaskedQueriesGetZeros) {
  torch::NoGradGuard no_grad;
  const torch::Tensor q = torch::full({1, 1, 1, 8}, 30.0f), k = torch::randn({1, 1, 3, 8}) * 30.0, v = torch::randn({1, 1, 3, 8});
  const torch::Tensor got = kernels::decode_attention(q, k, v, torch::Tensor());
  EXPECT_LT((got - reference(q, k, v, torch::Tensor())).abs().max().item<float>(), 1e-5);
  const torch::Tensor none = torch::zeros({1, 1, 1, 3}, torch::kBool);
  EXPECT_TRUE(kernels::decode_attention(q, k, v, none).eq(0).all().item<bool>());
}

TEST(DecodeAttention, AppliesOnlyToInferenceOnTheCpuWithFewQueries) {
  const torch::Tensor q = torch::zeros({2, 4, 1, 8});
  {
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(kernels::use_decode_attention(q, torch::Tensor(), /*training=*/false));
    EXPECT_TRUE(kernels::use_decode_attention(q, torch::ones({2, 1, 1, 3}, torch::kBool), false));
    EXPECT_FALSE(kernels::use_decode_attention(q, torch::Tensor(), /*training=*/true));
    EXPECT_FALSE(
        kernels::use_decode_attention(torch::zeros({2, 4, 17, 8}), torch::Tensor(), false));  // an encoder's queries
    EXPECT_FALSE(kernels::use_decode_attention(
        q, torch::ones({2, 1, 1, 1}, torch::kBool).expand({2, 1, 1, 1}).repeat({1, 1, 3, 1}), false));
    EXPECT_FALSE(kernels::use_decode_attention(q.to(torch::kFloat64), torch::Tensor(), false));
  }
  EXPECT_FALSE(kernels::use_decode_attention(q, torch::Tensor(), false));  // gradients on: autograd needs LibTorch's op
}

// Decoding under bf16 products caches keys and values in bf16: the kernels read them as the
// floats they round to, so bf16 keys and values give bit for bit what float32 keys and values
// holding the same numbers give (the float32 path being checked against LibTorch above).
TEST(DecodeAttention, Bf16KeysAndValuesReadAsTheFloatsTheyRoundTo) {
  torch::manual_seed(12);
  torch::NoGradGuard no_grad;
  const int64_t sentences = 6, heads = 4, tk = 13;
  auto rounded = [](const torch::Tensor& x) { return x.to(torch::kBFloat16).to(torch::kFloat32); };
  for (int64_t d : {64, 32, 48}) {  // the compiled-in widths and a run-time one
    const torch::Tensor kv = torch::randn({sentences, tk, 2 * heads * d}).to(torch::kBFloat16);
    auto heads_of = [&](const torch::Tensor& x, int64_t part) {
      return x.narrow(2, part * heads * d, heads * d).view({sentences, tk, heads, d}).transpose(1, 2);
    };
    torch::Tensor mask = torch::ones({sentences, 1, 1, tk}, torch::kBool);
    mask[2].slice(-1, 5).fill_(false);
    for (int64_t tq : {1, 5}) {
      const torch::Tensor q = torch::randn({sentences, tq, heads * d}).view({sentences, tq, heads, d}).transpose(1, 2);
      const torch::Tensor got = kernels::decode_attention(q, heads_of(kv, 0), heads_of(kv, 1), mask);
      const torch::Tensor as_floats = kv.to(torch::kFloat32);
      EXPECT_TRUE(got.equal(kernels::decode_attention(q, heads_of(as_floats, 0), heads_of(as_floats, 1), mask)))
          << "d " << d << ", " << tq << " queries";
    }
    const int64_t rows = 5, slot_rows = 8, steps = 6, capacity = 16;
    const torch::Tensor k = rounded(torch::randn({capacity, slot_rows, heads * d})),
                        v = rounded(torch::randn({capacity, slot_rows, heads * d}));
    const torch::Tensor history = torch::randint(0, slot_rows, {rows, steps}, torch::kInt32);
    const torch::Tensor q = torch::randn({rows, heads * d});
    EXPECT_TRUE(kernels::decode_self_attention(q, k.to(torch::kBFloat16), v.to(torch::kBFloat16), history, heads)
                    .equal(kernels::decode_self_attention(q, k, v, history, heads)))
        << "self-attention, d " << d;
    EXPECT_THROW(kernels::decode_self_attention(q, k.to(torch::kBFloat16), v, history, heads), c10::Error)
        << "keys and values of two types";
    EXPECT_THROW(kernels::decode_self_attention(q.to(torch::kBFloat16), k, v, history, heads), c10::Error)
        << "a bf16 query";
  }
}

}  // namespace
}  // namespace nmt::model
