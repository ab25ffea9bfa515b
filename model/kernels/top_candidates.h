#pragma once
// A decoding step's candidates: per row of logits, the k best allowed tokens and their
// log-probabilities under the whole vocabulary's normalizer, without a [rows, vocab]
// log-softmax. On the CPU one fused kernel reads each row while it is in cache and writes
// nothing back (`git show a23d15c^:bench/README.md`: at beam 5 the LibTorch chain logsumexp + topk over the
// step's logits cost about as much as the output projection that made them); on other
// devices LibTorch ops run there. Either way the few numbers search needs come back to the
// host.
#include <torch/torch.h>

#include <vector>

namespace nmt::model::kernels {

struct Candidates {
  torch::Tensor log_probs;  // [rows, k] float32 on the CPU, best first; -inf where a row has fewer than k
  torch::Tensor tokens;     // [rows, k] int64 on the CPU
};

// logits: [rows, vocab] float32. `banned` tokens are never candidates (pad, BOS). When
// `forced` is not empty it has one entry per row, and a row with forced[r] >= 0 has that
// token as its only candidate (the length limit admits only EOS). Equal logits rank the
// lower token id first on the CPU (elsewhere in topk's order).
Candidates top_candidates(const torch::Tensor& logits, int64_t k, const std::vector<int64_t>& banned,
                          const std::vector<int64_t>& forced);
// The same with LibTorch ops (logsumexp, index_fill, topk) on the logits' own device: what
// top_candidates runs off the CPU.
Candidates top_candidates_with_torch_ops(const torch::Tensor& logits, int64_t k, const std::vector<int64_t>& banned,
                                         const std::vector<int64_t>& forced);

}  // namespace nmt::model::kernels
