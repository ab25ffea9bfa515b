#include "model/structured_dropout.h"

namespace nmt::model {

torch::Tensor word_dropout(const torch::Tensor& embedded, double p, bool training) {
  if (!training || p <= 0.0) return embedded;
  TORCH_CHECK(p < 1.0, "word dropout p must be below 1, got ", p);
  TORCH_CHECK(embedded.dim() == 3, "word dropout expects [batch, len, d], got ", embedded.sizes());
  // One Bernoulli draw per token (not per element), broadcast over the embedding.
  auto keep = torch::empty({embedded.size(0), embedded.size(1), 1}, embedded.options()).bernoulli_(1.0 - p);
  return embedded * keep.div_(1.0 - p);
}

bool skip_layer(double p, bool training) {
  if (!training || p <= 0.0) return false;
  // On the CPU generator whatever the device, like fairseq's torch.empty(1).uniform_().
  return torch::rand({1}, torch::kFloat64).item<double>() < p;
}

}  // namespace nmt::model
