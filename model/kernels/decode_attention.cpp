#include "model/kernels/decode_attention.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>
#include <vector>

#include "model/kernels/cpu_clones.h"
#include "model/kernels/fast_exp.h"

namespace nmt::model::kernels {
namespace {

// Queries per pair up to which the kernel is used: a decoding step has one (self-attention,
// or greedy cross-attention) or the beam size (a sentence's beams against its source).
constexpr int64_t kMaxQueries = 16;

// One (query, head) pair's keys: key j at keys + key_offsets[j] and its value at values +
// value_offsets[j], left out where allowed[j] is false (allowed null: all in).
struct PairKeys {
  const float* keys;
  const int64_t* key_offsets;
  const float* values;
  const int64_t* value_offsets;
  const bool* allowed;
  int64_t count;
};

// kD > 0: the head width known when compiling, so the dot products and sums below unroll
// fully; kD == 0: the width `d` given at run time.
template <int64_t kD>
[[gnu::always_inline]] inline float dot(const float* a, const float* b, int64_t d) {
  const int64_t n = kD > 0 ? kD : d;
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

template <int64_t kD>
[[gnu::always_inline]] inline void axpy(float alpha, const float* x, float* y, int64_t d) {
  const int64_t n = kD > 0 ? kD : d;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// How many keys ahead the loops below ask for a key's or value's row. A decoding batch's
// keys and values (4,096 source tokens x 4 layers x K and V: 16 MB at width 128) are far
// beyond L2, and a pair's rows are a stride apart (cross-attention) or wherever the ancestor
// table points (self-attention), so without it each key's first load waited on memory (perf:
// the samples on the loads). A harness timing the kernel alone, old against new on the
// quickstart's shapes (Zen 3): self-attention at beam 5 0.78x, greedy cross-attention 0.85x.
constexpr int64_t kPrefetchAhead = 4;

// Asks for a row of d floats, every 64-byte cache line of it (a 32-wide head spans two).
template <int64_t kD>
[[gnu::always_inline]] inline void prefetch_row(const float* row, int64_t d) {
  const int64_t n = kD > 0 ? kD : d;
  for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(row + i);
}

// Softmax-weighted sum of the pair's values: scores in `scores`, the result added to `out`
// (zeroed by the caller; left zero when no key is allowed). prefetch: the pair's first query,
// whose rows are not in L1 yet (the next queries of a pair find them there).
template <int64_t kD>
[[gnu::always_inline]] inline void attend(const float* q, int64_t d, float scale, const PairKeys& pk, float* scores,
                                          float* out, bool prefetch) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  float m = kMinusInf;
  for (int64_t j = 0; j < pk.count; ++j) {
    if (prefetch && j + kPrefetchAhead < pk.count) prefetch_row<kD>(pk.keys + pk.key_offsets[j + kPrefetchAhead], d);
    scores[j] = (pk.allowed && !pk.allowed[j]) ? kMinusInf : scale * dot<kD>(q, pk.keys + pk.key_offsets[j], d);
    m = scores[j] > m ? scores[j] : m;
  }
  if (m == kMinusInf) return;  // nothing to attend to: zeros
  float sum = 0.0f;
  for (int64_t j = 0; j < pk.count; ++j) {
    scores[j] = exp_nonpositive(scores[j] - m);
    sum += scores[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; prefetch && j < kPrefetchAhead && j < pk.count; ++j)
    prefetch_row<kD>(pk.values + pk.value_offsets[j], d);
  for (int64_t j = 0; j < pk.count; ++j) {
    if (prefetch && j + kPrefetchAhead < pk.count)
      prefetch_row<kD>(pk.values + pk.value_offsets[j + kPrefetchAhead], d);
    if (!pk.allowed || pk.allowed[j]) axpy<kD>(scores[j] * inv, pk.values + pk.value_offsets[j], out, d);
  }
}

// The one entry the CPU dispatch picks a clone for: everything above is inlined into each
// clone, so a pair costs one indirect call rather than one per key (were dot and axpy clones
// of their own, each key would pay an indirect call: 8.5% of decoding at beam 5). The head
// widths of our shapes are compiled in: 32 (the recipes' 128 wide, 4 heads) and 64 (256 wide).
NMT_CPU_CLONES void attend_one(const float* q, int64_t d, float scale, const PairKeys& pk, float* scores, float* out,
                               bool first_query) {
  if (d == 32)
    attend<32>(q, d, scale, pk, scores, out, first_query);
  else if (d == 64)
    attend<64>(q, d, scale, pk, scores, out, first_query);
  else
    attend<0>(q, d, scale, pk, scores, out, first_query);
}

// The key row each query row reads: `rows` checked against the S key rows, or 0..B-1.
std::vector<int64_t> key_rows_of(const torch::Tensor& rows, int64_t batch, int64_t key_batch) {
  std::vector<int64_t> out(static_cast<size_t>(batch));
  if (!rows.defined()) {
    TORCH_CHECK(key_batch == batch, "decode_attention: ", batch, " query rows against ", key_batch, " key rows");
    for (int64_t b = 0; b < batch; ++b) out[b] = b;
    return out;
  }
  TORCH_CHECK(rows.scalar_type() == torch::kInt64 && rows.dim() == 1 && rows.size(0) == batch && rows.device().is_cpu(),
              "decode_attention: rows ", rows.sizes(), " for ", batch, " query rows");
  const torch::Tensor contiguous = rows.contiguous();
  const int64_t* rp = contiguous.const_data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(rp[b] >= 0 && rp[b] < key_batch, "decode_attention: row ", rp[b], " of ", key_batch, " key rows");
    out[b] = rp[b];
  }
  return out;
}

}  // namespace

bool use_decode_attention(const torch::Tensor& q, const torch::Tensor& key_mask, bool training) {
  if (training || torch::GradMode::is_enabled()) return false;
  if (!q.device().is_cpu() || q.scalar_type() != torch::kFloat32 || q.dim() != 4) return false;
  if (q.size(2) > kMaxQueries) return false;
  return !key_mask.defined() ||
         (key_mask.dim() == 4 && key_mask.size(1) == 1 && key_mask.size(2) == 1 && key_mask.scalar_type() == torch::kBool);
}

torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& key_mask, const torch::Tensor& rows) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "decode_attention needs [B, H, T, D] tensors");
  const int64_t batch = q.size(0), heads = q.size(1), tq = q.size(2), d = q.size(3), tk = k.size(2);
  const int64_t key_batch = k.size(0);
  TORCH_CHECK(v.size(0) == key_batch && k.size(1) == heads && v.size(1) == heads && v.size(2) == tk &&
                  k.size(3) == d && v.size(3) == d,
              "decode_attention: shapes q ", q.sizes(), " k ", k.sizes(), " v ", v.sizes(), " do not match");
  const std::vector<int64_t> key_row = key_rows_of(rows, batch, key_batch);
  for (const torch::Tensor* t : {&q, &k, &v})
    TORCH_CHECK(t->scalar_type() == torch::kFloat32 && t->device().is_cpu() && t->stride(3) == 1,
                "decode_attention needs float32 CPU tensors with a contiguous last dimension");
  torch::Tensor mask;
  if (key_mask.defined()) {
    TORCH_CHECK(key_mask.scalar_type() == torch::kBool && key_mask.dim() == 4 && key_mask.size(0) == key_batch &&
                    key_mask.size(3) == tk,
                "decode_attention: key mask ", key_mask.sizes(), " for ", key_batch, " x ", tk, " keys");
    mask = key_mask.reshape({key_batch, tk}).contiguous();
  }
  torch::Tensor out = torch::zeros({batch, tq, heads * d}, q.options());
  const float* qp = q.const_data_ptr<float>();
  const float* kp = k.const_data_ptr<float>();
  const float* vp = v.const_data_ptr<float>();
  const bool* mp = mask.defined() ? mask.const_data_ptr<bool>() : nullptr;
  float* op = out.data_ptr<float>();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  at::parallel_for(0, batch * heads, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(tk));
    std::vector<int64_t> key_offsets(static_cast<size_t>(tk)), value_offsets(static_cast<size_t>(tk));
    for (int64_t j = 0; j < tk; ++j) {
      key_offsets[j] = j * k.stride(2);
      value_offsets[j] = j * v.stride(2);
    }
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t b = pair / heads, h = pair % heads, s = key_row[b];
      const PairKeys pk{kp + s * k.stride(0) + h * k.stride(1), key_offsets.data(),
                        vp + s * v.stride(0) + h * v.stride(1), value_offsets.data(), mp ? mp + s * tk : nullptr, tk};
      for (int64_t i = 0; i < tq; ++i)
        attend_one(qp + b * q.stride(0) + h * q.stride(1) + i * q.stride(2), d, scale, pk, scores.data(),
                   op + (b * tq + i) * heads * d + h * d, i == 0);
    }
  });
  return out;
}

torch::Tensor decode_self_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& history, int64_t heads) {
  TORCH_CHECK(q.dim() == 2 && k.dim() == 3 && v.sizes() == k.sizes() && history.dim() == 2 &&
                  history.scalar_type() == torch::kInt32 && history.size(0) == q.size(0) && q.size(1) == k.size(2) &&
                  history.size(1) <= k.size(0) && heads > 0 && q.size(1) % heads == 0,
              "decode_self_attention: q ", q.sizes(), " k ", k.sizes(), " v ", v.sizes(), " history ", history.sizes(),
              " heads ", heads, " do not fit together");
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 && k.scalar_type() == torch::kFloat32 &&
                  v.scalar_type() == torch::kFloat32 && q.device().is_cpu() && q.stride(1) == 1 && k.is_contiguous() &&
                  v.is_contiguous() && history.is_contiguous(),
              "decode_self_attention needs float32 CPU tensors with contiguous rows");
  const int64_t rows = q.size(0), width = q.size(1), d = width / heads, steps = history.size(1);
  const int64_t slot = k.size(1) * width;  // floats per step
  auto out = torch::zeros({rows, width}, q.options());
  const float* qp = q.const_data_ptr<float>();
  const float* kp = k.const_data_ptr<float>();
  const float* vp = v.const_data_ptr<float>();
  const int32_t* hp = history.const_data_ptr<int32_t>();
  float* op = out.data_ptr<float>();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  at::parallel_for(0, rows * heads, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(steps));
    std::vector<int64_t> offsets(static_cast<size_t>(steps));  // of row r's keys and values alike
    int64_t offsets_row = -1;
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t r = pair / heads, h = pair % heads;
      if (r != offsets_row) {
        const int32_t* ancestors = hp + r * steps;
        for (int64_t s = 0; s < steps; ++s) offsets[s] = s * slot + ancestors[s] * width;
        offsets_row = r;
      }
      const PairKeys pk{kp + h * d, offsets.data(), vp + h * d, offsets.data(), nullptr, steps};
      attend_one(qp + r * q.stride(0) + h * d, d, scale, pk, scores.data(), op + r * width + h * d, true);
    }
  });
  return out;
}

}  // namespace nmt::model::kernels
