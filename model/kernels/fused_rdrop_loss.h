#pragma once
// R-Drop's loss (Liang et al. 2021, "R-Drop: Regularized Dropout for Neural Networks"; fairseq's
// --rdrop-alpha) fused with the label-smoothed cross-entropy, for the CPU.
//
// Each target position is run twice under independent dropout masks; the two predictions P
// and Q are pulled together by their symmetric KL divergence. Here a pair of rows is read
// twice in the forward (their statistics, then both divergences) and once in the backward,
// which writes both rows' gradients (cross-entropy and divergence together) over the logits:
// one pass more than the cross-entropy alone, and nothing of size [n, V] allocated.
#include <torch/torch.h>

namespace nmt::model::kernels {

struct RdropRowLosses {
  torch::Tensor loss;        // [2n] smoothed cross-entropy per row, differentiable
  torch::Tensor nll;         // [2n] -log p(target) per row, not differentiable
  torch::Tensor divergence;  // [n] per pair i: (KL(P_i || Q_i) + KL(Q_i || P_i)) / 2, differentiable
};

// logits: [2n, V] float32 contiguous on the CPU; row i and row n + i are the same target
// position's two predictions (target[i] == target[n + i]). Consumed as by
// fused_label_smoothed_cross_entropy: the backward overwrites them with their gradient.
// With a = log P_i, b = log Q_i, per pair:  divergence = sum_j (P_j - Q_j)(a_j - b_j) / 2.
RdropRowLosses fused_rdrop_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon);

}  // namespace nmt::model::kernels
