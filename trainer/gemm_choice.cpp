#include "trainer/gemm_choice.h"

#include <fmt/format.h>

#include <algorithm>

#include "config/config_error.h"

namespace nmt::trainer {

using model::kernels::GemmBackend;

namespace {

// Timed on the model's own products at the micro-batch's row count (capped: the ranking
// settles well below the largest batches, and the measurement is start-up time).
GemmDecision measure(const config::Config& cfg, const model::ModelConfig& model) {
  const int64_t rows = std::min<int64_t>(cfg.data.max_tokens, 2048);
  // translate and evaluate pass the config's model, whose vocabulary the manifest fills in
  // later: the size preprocess was asked for stands in for it.
  const int64_t vocab = model.vocab_size > 0 ? model.vocab_size : cfg.data.vocab_size;
  const auto shapes = model::kernels::transformer_gemm_shapes(rows, model.d_model, model.ffn_dim, vocab);
  const model::kernels::GemmChoice c = model::kernels::fastest_gemm_backend(shapes, 1.0);
  if (c.onednn_flops_per_s == 0)
    return {GemmBackend::kMkl, "mkl (auto: oneDNN unavailable: " + model::kernels::onednn_unavailable_reason() + ")"};
  return {c.backend, fmt::format("{} (auto: oneDNN {:.0f} vs MKL {:.0f} GFLOP/s on the model's shapes)",
                                 model::kernels::gemm_backend_name(c.backend), c.onednn_flops_per_s / 1e9,
                                 c.mkl_flops_per_s / 1e9)};
}

}  // namespace

GemmDecision decide_gemm_backend(const config::Config& cfg, const model::ModelConfig& model, const torch::Device& device,
                                 bool measure_here) {
  if (device.is_cuda()) return {GemmBackend::kMkl, "mkl (CUDA: no CPU GEMM)"};
  switch (cfg.train.gemm) {
    case config::Gemm::kOneDnn:
      if (!model::kernels::onednn_available())
        throw config::ConfigError("config key 'train.gemm' = onednn: " + model::kernels::onednn_unavailable_reason());
      return {GemmBackend::kOneDnn, "onednn (train.gemm)"};
    case config::Gemm::kAuto:
      if (measure_here) return measure(cfg, model);
      return {GemmBackend::kMkl, ""};
    case config::Gemm::kMkl:
      break;
  }
  return {GemmBackend::kMkl, "mkl (train.gemm)"};
}

GemmDecision choose_gemm_backend(const config::Config& cfg, const model::ModelConfig& model, dist::Communicator& comm,
                                 const torch::Device& device) {
  GemmDecision d = decide_gemm_backend(cfg, model, device, /*measure_here=*/comm.rank() == 0);
  if (cfg.train.gemm == config::Gemm::kAuto && !device.is_cuda()) {
    auto pick = torch::tensor({d.backend == GemmBackend::kOneDnn ? 1 : 0}, torch::kInt64).to(comm.device());
    comm.broadcast(pick, 0);
    d.backend = pick.item<int64_t>() == 1 ? GemmBackend::kOneDnn : GemmBackend::kMkl;
    if (comm.rank() != 0) d.why = std::string(model::kernels::gemm_backend_name(d.backend)) + " (auto: rank 0's pick)";
  }
  model::kernels::set_gemm_backend(d.backend);
  return d;
}

std::string keep_checkpoint_gemm(const config::Config& cfg, const std::string& saved, GemmDecision& decision) {
  if (cfg.train.gemm != config::Gemm::kAuto || saved.empty() || saved == model::kernels::gemm_backend_name(decision.backend))
    return "";
  const GemmBackend want = saved == "onednn" ? GemmBackend::kOneDnn : GemmBackend::kMkl;
  if (want == GemmBackend::kOneDnn && !model::kernels::onednn_available())
    return "the checkpoint was trained with the oneDNN GEMM, which is unavailable here: continuing with mkl";
  model::kernels::set_gemm_backend(want);
  decision = {want, saved + " (auto: kept from the checkpoint)"};
  return "gemm: " + decision.why + " instead of this start's measured pick";
}

const char* choose_attention_kernel(const config::Config& cfg) {
  const auto kernel = cfg.train.attention == config::Attention::kShort ? model::AttentionKernel::kShort
                                                                        : model::AttentionKernel::kSdpa;
  model::set_attention_kernel(kernel);
  return model::attention_kernel_name(kernel);
}

}  // namespace nmt::trainer
