#include "optim/loss.h"

#include "model/kernels/fused_cross_entropy.h"

namespace nmt::optim {

LossSums label_smoothed_loss(const torch::Tensor& hidden, const torch::Tensor& target, int64_t pad, double epsilon,
                             const std::function<torch::Tensor(const torch::Tensor&)>& project) {
  const torch::Tensor flat_target = target.reshape({-1});
  const torch::Tensor keep = flat_target.ne(pad).nonzero().squeeze(1);  // [n] rows that count
  const torch::Tensor h = hidden.reshape({-1, hidden.size(-1)}).index_select(0, keep);
  const torch::Tensor y = flat_target.index_select(0, keep);
  const torch::Tensor logits = project(h).to(torch::kFloat32);  // [n, V]
  LossSums out;
  out.tokens = keep.size(0);
  if (logits.device().is_cpu()) {
    const model::kernels::RowLosses rows =
        model::kernels::fused_label_smoothed_cross_entropy(logits.contiguous(), y, epsilon);
    out.loss = rows.loss.sum();
    out.nll = rows.nll.sum();
    return out;
  }
  return reference_label_smoothed_loss(logits, y, epsilon, out.tokens);
}

LossSums reference_label_smoothed_loss(const torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                       int64_t tokens) {
  const torch::Tensor lprobs = torch::log_softmax(logits, -1);
  const torch::Tensor nll = -lprobs.gather(1, target.unsqueeze(1)).squeeze(1);
  LossSums out;
  out.tokens = tokens;
  if (epsilon > 0) {
    // sum_j -lp[j] without materialising a smoothed target distribution.
    const torch::Tensor smooth = -lprobs.sum(-1);
    out.loss = ((1.0 - epsilon) * nll + (epsilon / static_cast<double>(lprobs.size(1))) * smooth).sum();
  } else {
    out.loss = nll.sum();
  }
  out.nll = nll.sum().detach();
  return out;
}

}  // namespace nmt::optim
