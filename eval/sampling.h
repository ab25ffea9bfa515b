#pragma once
// Sampled decoding: each next token is drawn from the model's distribution (all of it, or its
// k most probable tokens), sharpened or flattened by a temperature, as fairseq's --sampling
// and Marian's --output-sampling do. Used for noisy back-translation (Edunov et al. 2018).
//
// Reproducibility: the uniform number behind a draw is a counter-based hash of (seed, the
// sentence's line number in the input, the step), not the next number of a shared generator.
// So a sentence gets the same translation whatever batch it lands in, however many threads
// or ranks decode, and wherever a resumed job starts.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "model/kernels/top_candidates.h"

namespace nmt::eval {

struct SamplingOptions {
  int64_t topk = 0;          // draw among the k most probable tokens; 0 = the whole vocabulary
  double temperature = 1.0;  // the logits are divided by this before the softmax (> 0)
  uint64_t seed = 1;
};

// A uniform number in [0, 1) that depends only on its three arguments (SplitMix64 rounds).
double counter_uniform(uint64_t seed, uint64_t line, uint64_t step);

// One draw per row of `logits` [rows, vocab]: row r uses counter_uniform(seed, lines[r], step).
// `banned` tokens are never drawn; a row with forced[r] >= 0 takes that token (as in
// top_candidates). Returns [rows, 1] candidates whose log-probability is the model's own
// (temperature 1, whole vocabulary less the banned tokens), for the hypothesis's score.
model::kernels::Candidates sample_candidates(const torch::Tensor& logits, const std::vector<int64_t>& lines,
                                             int64_t step, const std::vector<int64_t>& banned,
                                             const std::vector<int64_t>& forced, const SamplingOptions& opt);

}  // namespace nmt::eval
