#include "optim/loss.h"

#include "model/kernels/fused_cross_entropy.h"
#include "model/kernels/fused_rdrop_loss.h"

namespace nmt::optim {

namespace {

struct CountedRows {
  torch::Tensor logits;  // [n, V] float32 of the non-pad target positions, in batch order
  torch::Tensor target;  // [n]
};

CountedRows project_counted_rows(const torch::Tensor& hidden, const torch::Tensor& target, int64_t pad,
                                 const std::function<torch::Tensor(const torch::Tensor&)>& project) {
  const torch::Tensor flat_target = target.reshape({-1});
  const torch::Tensor keep = flat_target.ne(pad).nonzero().squeeze(1);  // [n] rows that count
  const torch::Tensor h = hidden.reshape({-1, hidden.size(-1)}).index_select(0, keep);
  return {project(h).to(torch::kFloat32), flat_target.index_select(0, keep)};
}

}  // namespace

LossSums label_smoothed_loss(const torch::Tensor& hidden, const torch::Tensor& target, int64_t pad, double epsilon,
                             const std::function<torch::Tensor(const torch::Tensor&)>& project) {
  const CountedRows counted = project_counted_rows(hidden, target, pad, project);
  const torch::Tensor &logits = counted.logits, &y = counted.target;
  LossSums out;
  out.tokens = logits.size(0);
  if (logits.device().is_cpu()) {
    const model::kernels::RowLosses rows =
        model::kernels::fused_label_smoothed_cross_entropy(logits.contiguous(), y, epsilon);
    out.loss = rows.loss.sum();
    out.nll = rows.nll.sum();
    return out;
  }
  return reference_label_smoothed_loss(logits, y, epsilon, out.tokens);
}

LossSums rdrop_label_smoothed_loss(const torch::Tensor& hidden, const torch::Tensor& target, int64_t pad,
                                   double epsilon, double alpha,
                                   const std::function<torch::Tensor(const torch::Tensor&)>& project) {
  TORCH_CHECK(hidden.size(0) % 2 == 0, "R-Drop needs the batch twice (an even row count), got ", hidden.size(0));
  // The copies pad alike, so the first half of the counted rows (batch order) is the first copy.
  const CountedRows counted = project_counted_rows(hidden, target, pad, project);
  const torch::Tensor &logits = counted.logits, &y = counted.target;
  if (logits.device().is_cpu()) {
    const model::kernels::RdropRowLosses rows =
        model::kernels::fused_rdrop_cross_entropy(logits.contiguous(), y, epsilon);
    LossSums out;
    out.tokens = logits.size(0);
    out.loss = rows.loss.sum() + alpha * rows.divergence.sum();
    out.nll = rows.nll.sum();
    return out;
  }
  LossSums out = reference_label_smoothed_loss(logits, y, epsilon, logits.size(0));
  out.loss = out.loss + alpha * reference_rdrop_divergence(logits);
  return out;
}

torch::Tensor reference_rdrop_divergence(const torch::Tensor& logits) {
  const std::vector<torch::Tensor> copies = logits.chunk(2, 0);
  const torch::Tensor log_p = torch::log_softmax(copies[0], -1), log_q = torch::log_softmax(copies[1], -1);
  return 0.5 * ((log_p.exp() - log_q.exp()) * (log_p - log_q)).sum();
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
