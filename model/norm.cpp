#include "model/norm.h"

#include <cmath>

namespace nmt::model {

namespace {
constexpr double kLayerNormEps = 1e-5;  // torch::nn::LayerNorm's default, which checkpoints assume
constexpr double kScaleNormEps = 1e-5;  // the paper's code: the norm is clamped, not offset
}  // namespace

NormImpl::NormImpl(NormKind kind, int64_t d_model) : kind_(kind), d_model_(d_model) {
  if (kind == NormKind::kLayer) {
    weight_ = register_parameter("weight", torch::ones({d_model}));
    bias_ = register_parameter("bias", torch::zeros({d_model}));
  } else {
    scale_ = register_parameter("scale", torch::full({1}, std::sqrt(static_cast<double>(d_model))));
  }
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (kind_ == NormKind::kLayer) return torch::layer_norm(x, {d_model_}, weight_, bias_, kLayerNormEps);
  // The scale is applied to the [.., 1] factor, not to x: one multiply over x, not two.
  return x * (scale_ / torch::linalg_vector_norm(x, 2, {-1}, /*keepdim=*/true).clamp_min(kScaleNormEps));
}

}  // namespace nmt::model
