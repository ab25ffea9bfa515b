#include "model/kernels/fused_dropout.h"

#include <ATen/record_function.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <cstdint>
#include <mutex>

#include "model/kernels/cpu_clones.h"

namespace nmt::model::kernels {

namespace {

// Chris Wellons' lowbias32 integer hash (bias 0.17 against an ideal 32-bit permutation's
// ~0.02 avalanche: far beyond what a Bernoulli(p) mask needs), on the element index with
// the key's two halves mixed in before and between rounds. Pure 32-bit integer arithmetic,
// so the loops below vectorise.
inline uint32_t mask_hash(uint32_t index, uint32_t key_lo, uint32_t key_hi) {
  uint32_t h = index ^ key_lo;
  h ^= h >> 16;
  h *= 0x7feb352dU;
  h ^= h >> 15;
  h *= 0x846ca68bU;
  h ^= h >> 16;
  h += key_hi;
  h ^= h >> 16;
  h *= 0x7feb352dU;
  h ^= h >> 15;
  h *= 0x846ca68bU;
  h ^= h >> 16;
  return h;
}

struct MaskKey {
  uint32_t lo, hi;
  uint32_t threshold;  // drop when hash < threshold, i.e. with probability p
  float scale;         // 1 / (1 - p)
};

uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The key of the 2^32-element block holding flat index `begin`: the call's key run through
// splitmix64 with the block number, so blocks past the first get unrelated masks (a
// 32-bit counter alone would repeat them) and every element has its own (key, counter).
MaskKey key_for_block(uint64_t key, double p, int64_t begin) {
  const uint64_t block = static_cast<uint64_t>(begin) >> 32;
  const uint64_t k = splitmix64(key + block * 0x9e3779b97f4a7c15ULL);
  return {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32), static_cast<uint32_t>(p * 4294967296.0),
          static_cast<float>(1.0 / (1.0 - p))};
}

NMT_CPU_CLONES void forward_block(const float* x, const float* y, float* out, int64_t n, uint32_t first,
                                  MaskKey k) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = mask_hash(first + static_cast<uint32_t>(i), k.lo, k.hi) >= k.threshold;
    out[i] = (x ? x[i] : 0.0f) + y[i] * (keep ? k.scale : 0.0f);  // y * 0, as LibTorch: a NaN in y stays NaN
  }
}

NMT_CPU_CLONES void backward_block(const float* g, float* dy, int64_t n, uint32_t first, MaskKey k) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = mask_hash(first + static_cast<uint32_t>(i), k.lo, k.hi) >= k.threshold;
    dy[i] = g[i] * (keep ? k.scale : 0.0f);
  }
}

// Runs fn(begin, end) over the flat range in chunks that never straddle a 2^32 boundary.
template <typename Fn>
void for_blocks(int64_t numel, const Fn& fn) {
  constexpr int64_t kGrain = 1 << 15;
  at::parallel_for(0, numel, kGrain, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t boundary = ((begin >> 32) + 1) << 32;
      const int64_t stop = std::min(end, boundary);
      fn(begin, stop);
      begin = stop;
    }
  });
}

uint64_t draw_key() {
  auto* gen = at::check_generator<at::CPUGeneratorImpl>(at::detail::getDefaultCPUGenerator());
  std::lock_guard<std::mutex> lock(gen->mutex_);
  return gen->random64();
}

// out = x + mask(y) / (1 - p); x null means plain dropout. Returns the key for the backward.
uint64_t fused_forward(const float* x, const torch::Tensor& y, double p, torch::Tensor* out) {
  const uint64_t key = draw_key();
  *out = torch::empty_like(y);
  const float* yp = y.const_data_ptr<float>();
  float* op = out->data_ptr<float>();
  for_blocks(y.numel(), [&](int64_t begin, int64_t end) {
    forward_block(x ? x + begin : nullptr, yp + begin, op + begin, end - begin, static_cast<uint32_t>(begin),
                  key_for_block(key, p, begin));
  });
  return key;
}

torch::Tensor fused_backward(const torch::Tensor& grad, uint64_t key, double p) {
  const torch::Tensor g = grad.contiguous();
  auto dy = torch::empty_like(g);
  const float* gp = g.const_data_ptr<float>();
  float* dp = dy.data_ptr<float>();
  for_blocks(g.numel(), [&](int64_t begin, int64_t end) {
    backward_block(gp + begin, dp + begin, end - begin, static_cast<uint32_t>(begin), key_for_block(key, p, begin));
  });
  return dy;
}

class Dropout : public torch::autograd::Function<Dropout> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& y, double p) {
    RECORD_FUNCTION("nmt::Dropout", std::vector<c10::IValue>());  // named in profiles (train --profile)
    torch::Tensor out;
    ctx->saved_data["key"] = static_cast<int64_t>(fused_forward(nullptr, y, p, &out));
    ctx->saved_data["p"] = p;
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto key = static_cast<uint64_t>(ctx->saved_data["key"].toInt());
    return {fused_backward(grads[0], key, ctx->saved_data["p"].toDouble()), torch::Tensor()};
  }
};

class DropoutAdd : public torch::autograd::Function<DropoutAdd> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& y,
                               double p) {
    RECORD_FUNCTION("nmt::DropoutAdd", std::vector<c10::IValue>());  // named in profiles (train --profile)
    torch::Tensor out;
    ctx->saved_data["key"] = static_cast<int64_t>(fused_forward(x.const_data_ptr<float>(), y, p, &out));
    ctx->saved_data["p"] = p;
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto key = static_cast<uint64_t>(ctx->saved_data["key"].toInt());
    return {grads[0], fused_backward(grads[0], key, ctx->saved_data["p"].toDouble()), torch::Tensor()};
  }
};

bool fusable(const torch::Tensor& x, const torch::Tensor& y) {
  auto ok = [](const torch::Tensor& t) {
    return t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous();
  };
  return ok(y) && (!x.defined() || (ok(x) && x.sizes() == y.sizes()));
}

}  // namespace

bool dropout_keeps(uint64_t key, int64_t index, double p) {
  const int64_t block = (index >> 32) << 32;
  const MaskKey k = key_for_block(key, p, block);
  return mask_hash(static_cast<uint32_t>(index), k.lo, k.hi) >= k.threshold;
}

torch::Tensor dropout_add(const torch::Tensor& x, const torch::Tensor& y, double p, bool training) {
  if (!training || p == 0.0) return x.defined() ? x + y : y;
  TORCH_CHECK(p > 0.0 && p < 1.0, "dropout probability ", p, " is outside [0, 1)");
  if (!fusable(x, y)) {
    auto dropped = torch::nn::functional::dropout(y, torch::nn::functional::DropoutFuncOptions().p(p).training(true));
    return x.defined() ? x + dropped : dropped;
  }
  return x.defined() ? DropoutAdd::apply(x, y, p) : Dropout::apply(y, p);
}

}  // namespace nmt::model::kernels
