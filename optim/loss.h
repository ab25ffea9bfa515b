#pragma once
// Label-smoothed cross-entropy, computed only at non-pad target positions.
#include <torch/torch.h>

namespace nmt::optim {

struct LossSums {
  torch::Tensor loss;  // scalar: sum over tokens of the smoothed loss (what is minimised)
  torch::Tensor nll;   // scalar: sum of plain negative log-likelihoods (for perplexity), detached
  int64_t tokens = 0;  // non-pad target tokens summed over
};

// Per token t with log-probabilities lp over V classes (PyTorch's definition, as
// F.cross_entropy(label_smoothing=eps)):
//   loss_t = (1 - eps) * (-lp[target]) + (eps / V) * sum_j (-lp[j])
// `project` maps hidden states [n, d] to logits [n, V]; it is applied to the non-pad rows
// only, so padding costs neither the output projection nor the softmax. On the CPU the
// softmax and loss run fused (model/kernels/fused_cross_entropy.h); elsewhere as LibTorch ops.
LossSums label_smoothed_loss(const torch::Tensor& hidden, const torch::Tensor& target, int64_t pad, double epsilon,
                             const std::function<torch::Tensor(const torch::Tensor&)>& project);

// R-Drop (Liang et al. 2021; fairseq's --rdrop-alpha): `hidden` and `target` hold every
// sentence twice, the second copy in the second half of the batch (data::with_second_copy), run
// under independent dropout masks. What is minimised is both copies' label-smoothed loss plus
// alpha times each position's symmetric KL divergence between its two predictions,
//   sum_t loss_t(P) + loss_t(Q) + alpha (KL(P_t || Q_t) + KL(Q_t || P_t)) / 2,
// and `tokens` counts both copies. fairseq divides the same sum by one copy's tokens, so at
// the same alpha the relative weights are the same and the gradient is half of fairseq's:
// under Adam only optim.clip_norm sees the difference (it acts as fairseq's 2 x clip_norm).
LossSums rdrop_label_smoothed_loss(const torch::Tensor& hidden, const torch::Tensor& target, int64_t pad,
                                   double epsilon, double alpha,
                                   const std::function<torch::Tensor(const torch::Tensor&)>& project);

// The same loss from [n, V] logits of the counted rows, as log_softmax -> gather -> sum
// (any device and dtype; `tokens` is copied into the result).
LossSums reference_label_smoothed_loss(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                       int64_t tokens);

// R-Drop's divergence summed over pairs, from [2n, V] logits whose rows i and n + i pair up,
// as LibTorch ops: sum_i sum_j (P_ij - Q_ij)(log P_ij - log Q_ij) / 2.
torch::Tensor reference_rdrop_divergence(const torch::Tensor& logits);

}  // namespace nmt::optim
