#include "eval/sampling.h"

#include <limits>

#include "base/splitmix64.h"

namespace nmt::eval {
// Three SplitMix64 outputs chained, each keyed by the next counter: a hash of the triple.
double counter_uniform(uint64_t seed, uint64_t line, uint64_t step) {
  const uint64_t h = base::SplitMix64{base::SplitMix64{base::SplitMix64{seed}.next() ^ line}.next() ^ step}.next();
  return static_cast<double>(h >> 11) * 0x1.0p-53;  // the top 53 bits: every double in [0, 1) a multiple of 2^-53
}

// Inverse-CDF sampling, one row at a time in LibTorch ops over the whole batch: the row's
// cumulative probabilities, and the first position whose cumulative sum exceeds u times
// the row's total (the total, not 1, so that the float sum's rounding never leaves u past
// the end). A token of probability 0 never has a sum above the one before it, so it is never
// drawn.
model::kernels::Candidates sample_candidates(const torch::Tensor& logits, const std::vector<int64_t>& lines,
                                             int64_t step, const std::vector<int64_t>& banned,
                                             const std::vector<int64_t>& forced, const SamplingOptions& opt) {
  torch::NoGradGuard no_grad;
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  torch::Tensor scores = logits.to(torch::kFloat32).clone();
  if (!banned.empty())
    scores.index_fill_(1, torch::tensor(banned, torch::kInt64).to(scores.device()),
                       -std::numeric_limits<float>::infinity());
  const torch::Tensor log_probs = torch::log_softmax(scores, 1);
  torch::Tensor pool = opt.temperature == 1.0 ? log_probs : log_probs / opt.temperature;
  torch::Tensor pool_tokens;  // the vocabulary ids of pool's columns; undefined = the identity
  if (opt.topk > 0 && opt.topk < vocab) std::tie(pool, pool_tokens) = pool.topk(opt.topk, 1);
  const torch::Tensor cdf = torch::softmax(pool, 1).cumsum(1);
  std::vector<float> u(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    u[static_cast<size_t>(r)] = static_cast<float>(counter_uniform(opt.seed, static_cast<uint64_t>(lines[r]),
                                                                   static_cast<uint64_t>(step)));
  const torch::Tensor target =
      torch::tensor(u, torch::kFloat32).to(cdf.device()).view({rows, 1}) * cdf.select(1, cdf.size(1) - 1).view({rows, 1});
  torch::Tensor pos = torch::searchsorted(cdf, target, /*out_int32=*/false, /*right=*/true).clamp_max(cdf.size(1) - 1);
  torch::Tensor tokens = pool_tokens.defined() ? pool_tokens.gather(1, pos) : pos;
  tokens = tokens.to(torch::kCPU).contiguous();
  if (!forced.empty()) {
    auto t = tokens.accessor<int64_t, 2>();
    for (int64_t r = 0; r < rows; ++r)
      if (forced[static_cast<size_t>(r)] >= 0) t[r][0] = forced[static_cast<size_t>(r)];
  }
  const torch::Tensor chosen = log_probs.gather(1, tokens.to(log_probs.device())).to(torch::kCPU).contiguous();
  return {chosen, tokens};
}

}  // namespace nmt::eval
