#include "model/kernels/decode_attention.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "model/kernels/cpu_clones.h"
#include "model/kernels/fast_exp.h"

namespace nmt::model::kernels {
namespace {

// Queries per pair up to which the kernel is used: a decoding step has one (self-attention,
// or greedy cross-attention) or the beam size (a sentence's beams against its source).
constexpr int64_t kMaxQueries = 16;

// One (query, head) pair's keys: key j at keys + key_offsets[j] and its value at values +
// value_offsets[j], left out where allowed[j] is false (allowed null: all in). T: float, or
// uint16_t for bf16 keys and values (their bits; bf16 decoding caches them so, half the bytes).
template <typename T>
struct PairKeys {
  const T* keys;
  const int64_t* key_offsets;
  const T* values;
  const int64_t* value_offsets;
  const bool* allowed;
  int64_t count;
};

// 16 floats as one value: a zmm register in the AVX-512 clone, two ymm or four xmm in the others.
// Such values stay inside the always-inlined helpers of one clone, so that their ABI differing
// between clones (which -Wpsabi warns of) never matters.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float Float16 __attribute__((vector_size(64)));
typedef float Float8 __attribute__((vector_size(32)));
typedef float Float4 __attribute__((vector_size(16)));
typedef uint16_t Bits16 __attribute__((vector_size(32)));
typedef uint32_t Wide16 __attribute__((vector_size(64)));

// Floats p[0..16), p float or the bits of bf16 (a bf16 is the top half of a float: exact).
[[gnu::always_inline]] inline Float16 load16(const float* p) {
  Float16 v;
  std::memcpy(&v, p, sizeof v);  // an unaligned load
  return v;
}
[[gnu::always_inline]] inline Float16 load16(const uint16_t* p) {
  Bits16 bits;
  std::memcpy(&bits, p, sizeof bits);
  const Wide16 wide = __builtin_convertvector(bits, Wide16) << 16;
  Float16 v;
  std::memcpy(&v, &wide, sizeof v);
  return v;
}
[[gnu::always_inline]] inline float to_float(float x) { return x; }
[[gnu::always_inline]] inline float to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &wide, sizeof x);
  return x;
}

// The sum of v's lanes as a tree, 16 -> 8 -> 4 -> 2 -> 1: four dependent adds. The compiler's
// own reduction (omp simd) added them one by one, fifteen dependent scalar adds per key, on
// which the samples of the scores loop sat; with this, the quickstart's cross-attention at beam
// 5 took half the time (Zen 4, a harness timing the kernel alone).
[[gnu::always_inline]] inline float lane_sum(Float16 v) {
  const Float8 h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                   __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Float4 f = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
  const Float4 t = f + __builtin_shufflevector(f, f, 2, 3, 0, 1);
  return t[0] + t[1];
}

// kD > 0: the head width known when compiling, so the dot products and sums below unroll
// fully; kD == 0: the width `d` given at run time. Both take 16 elements at a time and the rest
// one by one, in the same order for float and bf16 keys, so bf16 keys give exactly what the
// floats they stand for would.
template <int64_t kD, typename T>
[[gnu::always_inline]] inline float dot(const float* a, const T* b, int64_t d) {
  const int64_t n = kD > 0 ? kD : d;
  Float16 sum{};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) sum += load16(a + i) * load16(b + i);
  float s = lane_sum(sum);
  for (; i < n; ++i) s += a[i] * to_float(b[i]);
  return s;
}

template <int64_t kD, typename T>
[[gnu::always_inline]] inline void axpy(float alpha, const T* x, float* y, int64_t d) {
  const int64_t n = kD > 0 ? kD : d;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const Float16 sum = load16(y + i) + alpha * load16(x + i);
    std::memcpy(y + i, &sum, sizeof sum);
  }
  for (; i < n; ++i) y[i] += alpha * to_float(x[i]);
}

// How many keys ahead the loops below ask for a key's or value's row. A decoding batch's
// keys and values (4,096 source tokens x 4 layers x K and V: 16 MB at width 128) are far
// beyond L2, and a pair's rows are a stride apart (cross-attention) or wherever the ancestor
// table points (self-attention), so without it each key's first load waited on memory (perf:
// the samples on the loads). A harness timing the kernel alone, old against new on the
// quickstart's shapes (Zen 3): self-attention at beam 5 0.78x, greedy cross-attention 0.85x.
constexpr int64_t kPrefetchAhead = 4;

// Asks for a row of d elements, every 64-byte cache line of it (a 32-wide head of floats spans two).
template <int64_t kD, typename T>
[[gnu::always_inline]] inline void prefetch_row(const T* row, int64_t d) {
  const int64_t n = kD > 0 ? kD : d;
  for (int64_t i = 0; i < n; i += 64 / static_cast<int64_t>(sizeof(T))) __builtin_prefetch(row + i);
}

// Softmax-weighted sum of the pair's values: scores in `scores`, the result added to `out`
// (zeroed by the caller; left zero when no key is allowed). prefetch: the pair's first query,
// whose rows are not in L1 yet (the next queries of a pair find them there).
template <int64_t kD, typename T>
[[gnu::always_inline]] inline void attend(const float* q, int64_t d, float scale, const PairKeys<T>& pk, float* scores,
                                          float* out, bool prefetch) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  float m = kMinusInf;
  for (int64_t j = 0; j < pk.count; ++j) {
    if (prefetch && j + kPrefetchAhead < pk.count) prefetch_row<kD>(pk.keys + pk.key_offsets[j + kPrefetchAhead], d);
    scores[j] = (pk.allowed && !pk.allowed[j]) ? kMinusInf : scale * dot<kD>(q, pk.keys + pk.key_offsets[j], d);
    m = scores[j] > m ? scores[j] : m;
  }
  if (m == kMinusInf) return;  // nothing to attend to: zeros
  // The exponentials a vector at a time, then their sum key by key: the same sum, in the same
  // order, as one loop doing both, which the compiler could not vectorise.
#pragma omp simd
  for (int64_t j = 0; j < pk.count; ++j) scores[j] = exp_nonpositive(scores[j] - m);
  float sum = 0.0f;
  for (int64_t j = 0; j < pk.count; ++j) sum += scores[j];
  const float inv = 1.0f / sum;
  for (int64_t j = 0; prefetch && j < kPrefetchAhead && j < pk.count; ++j)
    prefetch_row<kD>(pk.values + pk.value_offsets[j], d);
  // The sum builds in a local array (registers, for a width compiled in) and reaches `out` once:
  // added into `out` key by key, each key's adds waited on the previous key's stores (perf: the
  // samples on the stores and the broadcast after them), as the compiler cannot tell `out` from
  // the values.
  constexpr int64_t kWidth = kD > 0 ? kD : 1;
  alignas(64) float sum_in_registers[kWidth] = {};
  float* acc = kD > 0 ? sum_in_registers : out;
  for (int64_t j = 0; j < pk.count; ++j) {
    if (prefetch && j + kPrefetchAhead < pk.count)
      prefetch_row<kD>(pk.values + pk.value_offsets[j + kPrefetchAhead], d);
    if (!pk.allowed || pk.allowed[j]) axpy<kD>(scores[j] * inv, pk.values + pk.value_offsets[j], acc, d);
  }
  if constexpr (kD > 0) {
#pragma omp simd
    for (int64_t i = 0; i < kD; ++i) out[i] += sum_in_registers[i];
  }
}

// The one entry the CPU dispatch picks a clone for: everything above is inlined into each
// clone, so a pair costs one indirect call rather than one per key (were dot and axpy clones
// of their own, each key would pay an indirect call: 8.5% of decoding at beam 5). The head
// widths of our shapes are compiled in: 32 (the recipes' 128 wide, 4 heads) and 64 (256 wide).
template <typename T>
[[gnu::always_inline]] inline void attend_width(const float* q, int64_t d, float scale, const PairKeys<T>& pk,
                                                float* scores, float* out, bool first_query) {
  if (d == 32)
    attend<32>(q, d, scale, pk, scores, out, first_query);
  else if (d == 64)
    attend<64>(q, d, scale, pk, scores, out, first_query);
  else
    attend<0>(q, d, scale, pk, scores, out, first_query);
}
NMT_CPU_CLONES void attend_one(const float* q, int64_t d, float scale, const PairKeys<float>& pk, float* scores,
                               float* out, bool first_query) {
  attend_width(q, d, scale, pk, scores, out, first_query);
}
NMT_CPU_CLONES void attend_one(const float* q, int64_t d, float scale, const PairKeys<uint16_t>& pk, float* scores,
                               float* out, bool first_query) {
  attend_width(q, d, scale, pk, scores, out, first_query);
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

// A float32 tensor's elements, or a bf16 tensor's bits.
template <typename T>
const T* elements(const torch::Tensor& t) {
  if constexpr (std::is_same_v<T, float>)
    return t.const_data_ptr<float>();
  else
    return reinterpret_cast<const uint16_t*>(t.const_data_ptr<c10::BFloat16>());
}

// Keys and values float32 or bf16 (both alike), on the CPU, each row's elements contiguous.
bool fits_keys(const torch::Tensor& k, const torch::Tensor& v, int64_t last) {
  return k.scalar_type() == v.scalar_type() &&
         (k.scalar_type() == torch::kFloat32 || k.scalar_type() == torch::kBFloat16) && k.device().is_cpu() &&
         v.device().is_cpu() && k.stride(last) == 1 && v.stride(last) == 1;
}

// decode_attention's pairs, its arguments checked; mask: [S, Tk] or null.
template <typename T>
void cross_pairs(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const bool* mp,
                 const std::vector<int64_t>& key_row, torch::Tensor& out) {
  const int64_t heads = q.size(1), tq = q.size(2), d = q.size(3), tk = k.size(2);
  const float* qp = q.const_data_ptr<float>();
  const T* kp = elements<T>(k);
  const T* vp = elements<T>(v);
  float* op = out.data_ptr<float>();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  at::parallel_for(0, q.size(0) * heads, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(tk));
    std::vector<int64_t> key_offsets(static_cast<size_t>(tk)), value_offsets(static_cast<size_t>(tk));
    for (int64_t j = 0; j < tk; ++j) {
      key_offsets[j] = j * k.stride(2);
      value_offsets[j] = j * v.stride(2);
    }
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t b = pair / heads, h = pair % heads, s = key_row[b];
      const PairKeys<T> pk{kp + s * k.stride(0) + h * k.stride(1), key_offsets.data(),
                           vp + s * v.stride(0) + h * v.stride(1), value_offsets.data(), mp ? mp + s * tk : nullptr,
                           tk};
      for (int64_t i = 0; i < tq; ++i)
        attend_one(qp + b * q.stride(0) + h * q.stride(1) + i * q.stride(2), d, scale, pk, scores.data(),
                   op + (b * tq + i) * heads * d + h * d, i == 0);
    }
  });
}

// decode_self_attention's pairs, its arguments checked.
template <typename T>
void self_pairs(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& history,
                int64_t heads, torch::Tensor& out) {
  const int64_t rows = q.size(0), width = q.size(1), d = width / heads, steps = history.size(1);
  const int64_t slot = k.size(1) * width;  // elements per step
  const float* qp = q.const_data_ptr<float>();
  const T* kp = elements<T>(k);
  const T* vp = elements<T>(v);
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
      const PairKeys<T> pk{kp + h * d, offsets.data(), vp + h * d, offsets.data(), nullptr, steps};
      attend_one(qp + r * q.stride(0) + h * d, d, scale, pk, scores.data(), op + r * width + h * d, true);
    }
  });
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
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 && q.device().is_cpu() && q.stride(3) == 1 && fits_keys(k, v, 3),
              "decode_attention needs a float32 query and float32 or bf16 keys and values, CPU tensors with a "
              "contiguous last dimension");
  torch::Tensor mask;
  if (key_mask.defined()) {
    TORCH_CHECK(key_mask.scalar_type() == torch::kBool && key_mask.dim() == 4 && key_mask.size(0) == key_batch &&
                    key_mask.size(3) == tk,
                "decode_attention: key mask ", key_mask.sizes(), " for ", key_batch, " x ", tk, " keys");
    mask = key_mask.reshape({key_batch, tk}).contiguous();
  }
  const bool* mp = mask.defined() ? mask.const_data_ptr<bool>() : nullptr;
  torch::Tensor out = torch::zeros({batch, tq, heads * d}, q.options());
  if (k.scalar_type() == torch::kBFloat16)
    cross_pairs<uint16_t>(q, k, v, mp, key_row, out);
  else
    cross_pairs<float>(q, k, v, mp, key_row, out);
  return out;
}

torch::Tensor decode_self_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& history, int64_t heads) {
  TORCH_CHECK(q.dim() == 2 && k.dim() == 3 && v.sizes() == k.sizes() && history.dim() == 2 &&
                  history.scalar_type() == torch::kInt32 && history.size(0) == q.size(0) && q.size(1) == k.size(2) &&
                  history.size(1) <= k.size(0) && heads > 0 && q.size(1) % heads == 0,
              "decode_self_attention: q ", q.sizes(), " k ", k.sizes(), " v ", v.sizes(), " history ", history.sizes(),
              " heads ", heads, " do not fit together");
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 && q.device().is_cpu() && q.stride(1) == 1 && fits_keys(k, v, 2) &&
                  k.is_contiguous() && v.is_contiguous() && history.is_contiguous(),
              "decode_self_attention needs a float32 query and float32 or bf16 keys and values, CPU tensors with "
              "contiguous rows");
  auto out = torch::zeros({q.size(0), q.size(1)}, q.options());
  if (k.scalar_type() == torch::kBFloat16)
    self_pairs<uint16_t>(q, k, v, history, heads, out);
  else
    self_pairs<float>(q, k, v, history, heads, out);
  return out;
}

}  // namespace nmt::model::kernels
