#include "model/kernels/top_candidates.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/kernels/cpu_clones.h"
#include "model/kernels/fast_exp.h"

namespace nmt::model::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// The top-k scan skips a block of logits with one vectorised max when none of it can enter;
// 64 floats are four AVX-512 or eight AVX2 registers.
constexpr int64_t kBlock = 64;

NMT_CPU_CLONES float max_of(const float* z, int64_t n) {
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; ++j) m = z[j] > m ? z[j] : m;
  return m;
}

NMT_CPU_CLONES float sum_exp_shifted(const float* z, int64_t n, float shift) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < n; ++j) s += exp_nonpositive(z[j] - shift);
  return s;
}

// The k largest values offered so far with their ids, sorted: larger first, and among equal
// values the earlier offered (the lower id) first.
class BestK {
 public:
  BestK(float* values, int64_t* ids, int64_t k) : values_(values), ids_(ids), k_(k) {}
  bool full() const { return size_ == k_; }
  float threshold() const { return full() ? values_[k_ - 1] : kNegInf; }
  void offer(float x, int64_t id) {
    if (full() && !(x > values_[k_ - 1])) return;
    int64_t pos = full() ? k_ - 1 : size_++;
    for (; pos > 0 && values_[pos - 1] < x; --pos) {
      values_[pos] = values_[pos - 1];
      ids_[pos] = ids_[pos - 1];
    }
    values_[pos] = x;
    ids_[pos] = id;
  }
  int64_t size() const { return size_; }

 private:
  float* values_;
  int64_t* ids_;
  int64_t k_, size_ = 0;
};

void cpu_row(const float* z, int64_t vocab, int64_t k, const std::vector<int64_t>& banned, int64_t forced,
             float* out_lp, int64_t* out_token) {
  const float m = max_of(z, vocab);
  const float lse = m + std::log(sum_exp_shifted(z, vocab, m));
  BestK best(out_lp, out_token, k);
  if (forced >= 0) {
    best.offer(z[forced], forced);
  } else {
    for (int64_t b = 0; b < vocab; b += kBlock) {
      const int64_t n = std::min(kBlock, vocab - b);
      if (best.full() && !(max_of(z + b, n) > best.threshold())) continue;
      for (int64_t j = b; j < b + n; ++j) {
        if (best.full() && !(z[j] > best.threshold())) continue;
        if (std::find(banned.begin(), banned.end(), j) != banned.end()) continue;
        best.offer(z[j], j);
      }
    }
  }
  for (int64_t c = 0; c < best.size(); ++c) out_lp[c] -= lse;
  for (int64_t c = best.size(); c < k; ++c) {
    out_lp[c] = kNegInf;
    out_token[c] = 0;
  }
}

Candidates on_cpu(const torch::Tensor& logits, int64_t k, const std::vector<int64_t>& banned,
                  const std::vector<int64_t>& forced) {
  const torch::Tensor z = logits.contiguous();
  const int64_t rows = z.size(0), vocab = z.size(1);
  Candidates out{torch::empty({rows, k}, torch::kFloat32), torch::empty({rows, k}, torch::kInt64)};
  const float* zp = z.const_data_ptr<float>();
  float* lp = out.log_probs.data_ptr<float>();
  int64_t* tp = out.tokens.data_ptr<int64_t>();
  at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      cpu_row(zp + r * vocab, vocab, k, banned, forced.empty() ? -1 : forced[r], lp + r * k, tp + r * k);
  });
  return out;
}

void check_arguments(const torch::Tensor& logits, int64_t k, const std::vector<int64_t>& forced) {
  TORCH_CHECK(logits.dim() == 2 && logits.scalar_type() == torch::kFloat32,
              "top_candidates needs [rows, vocab] float32 logits, got ", logits.sizes(), " ", logits.scalar_type());
  TORCH_CHECK(k >= 1, "top_candidates: k must be at least 1, got ", k);
  TORCH_CHECK(forced.empty() || static_cast<int64_t>(forced.size()) == logits.size(0),
              "top_candidates: ", forced.size(), " forced entries for ", logits.size(0), " rows");
  for (int64_t f : forced)
    TORCH_CHECK(f < logits.size(1), "top_candidates: forced token ", f, " is outside the vocabulary of ",
                logits.size(1));
}

}  // namespace

// LibTorch ops on the logits' device, only [rows, k] copied back.
Candidates top_candidates_with_torch_ops(const torch::Tensor& logits, int64_t k, const std::vector<int64_t>& banned,
                                         const std::vector<int64_t>& forced) {
  check_arguments(logits, k, forced);
  const torch::Device device = logits.device();
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  const torch::Tensor lse = logits.logsumexp(1, /*keepdim=*/true);
  torch::Tensor z = banned.empty() ? logits.clone()
                                   : logits.index_fill(1, torch::tensor(banned, torch::kInt64).to(device), kNegInf);
  std::vector<int64_t> forced_rows, forced_tokens;
  for (size_t r = 0; r < forced.size(); ++r)
    if (forced[r] >= 0) {
      forced_rows.push_back(static_cast<int64_t>(r));
      forced_tokens.push_back(forced[r]);
    }
  if (!forced_rows.empty()) {
    const torch::Tensor fr = torch::tensor(forced_rows, torch::kInt64).to(device);
    const torch::Tensor ft = torch::tensor(forced_tokens, torch::kInt64).to(device);
    const torch::Tensor kept = logits.index({fr, ft});
    z.index_fill_(0, fr, kNegInf);
    z.index_put_({fr, ft}, kept);
  }
  auto [top, token] = z.topk(std::min(k, vocab), 1);
  Candidates out{(top - lse).cpu(), token.cpu()};
  if (k > vocab) {
    out.log_probs = torch::cat({out.log_probs, torch::full({rows, k - vocab}, kNegInf)}, 1);
    out.tokens = torch::cat({out.tokens, torch::zeros({rows, k - vocab}, torch::kInt64)}, 1);
  }
  return out;
}

Candidates top_candidates(const torch::Tensor& logits, int64_t k, const std::vector<int64_t>& banned,
                          const std::vector<int64_t>& forced) {
  check_arguments(logits, k, forced);
  return logits.device().is_cpu() ? on_cpu(logits, k, banned, forced)
                                  : top_candidates_with_torch_ops(logits, k, banned, forced);
}

}  // namespace nmt::model::kernels
