#pragma once
// Label-smoothed cross-entropy fused into two passes over the logits, for the CPU.
//
// LibTorch's log_softmax -> gather -> sum chain reads and writes the [n, V] logits about ten
// times per update (log-probabilities, their gradient, a zero-filled scatter target, ...):
// with an 8k vocabulary that was ~15% of an update on 2 cores. Here each row is read once
// in the forward (max, sum of exp, sum, the target's logit: the row stays in L2) and once in
// the backward, which writes the gradient over the logits themselves (llm.c's fused
// classifier): nothing of size [n, V] is allocated beyond the logits.
#include <torch/torch.h>

namespace nmt::model::kernels {

struct RowLosses {
  torch::Tensor loss;  // [n] smoothed loss per row, differentiable w.r.t. the logits
  torch::Tensor nll;   // [n] -log p(target) per row, not differentiable
};

// logits: [n, V] float32 contiguous on the CPU, consumed (the backward overwrites them with
// their gradient, so they must not be used after this call, nor be a leaf; backward may
// run only once, and not with create_graph: the gradient is not itself differentiable).
// target: [n] int64 in [0, V). Per row, with lse = log sum_j exp(z_j):
//   nll  = lse - z[target]
//   loss = (1 - eps) nll + (eps / V) sum_j (lse - z_j)      (= F.cross_entropy(label_smoothing=eps))
RowLosses fused_label_smoothed_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon);

}  // namespace nmt::model::kernels
