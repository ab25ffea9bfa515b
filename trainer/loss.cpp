#include "trainer/loss.h"

namespace nmt::trainer {

LossSums label_smoothed_loss(const torch::Tensor& hidden, const torch::Tensor& target, int64_t pad, double epsilon,
                             const std::function<torch::Tensor(const torch::Tensor&)>& project) {
  const torch::Tensor flat_target = target.reshape({-1});
  const torch::Tensor keep = flat_target.ne(pad).nonzero().squeeze(1);  // [n] rows that count
  const torch::Tensor h = hidden.reshape({-1, hidden.size(-1)}).index_select(0, keep);
  const torch::Tensor y = flat_target.index_select(0, keep);
  const torch::Tensor lprobs = torch::log_softmax(project(h).to(torch::kFloat32), -1);  // [n, V]
  const torch::Tensor nll = -lprobs.gather(1, y.unsqueeze(1)).squeeze(1);               // [n]
  LossSums out;
  out.tokens = keep.size(0);
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

}  // namespace nmt::trainer
