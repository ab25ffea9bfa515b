#include "runtime/gemm_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "config/config_error.h"
#include "model/kernels/bf16_gemm.h"

namespace nmt::runtime {

using model::kernels::GemmBackend;

namespace {

// Timed on the model's own products.
GemmDecision measure(const config::Config& cfg, const model::ModelConfig& model) {
  const int64_t rows = gemm_rows_timed(cfg);
  const int64_t vocab = vocab_of(cfg, model);
  const auto shapes = model::kernels::transformer_gemm_shapes(rows, model.d_model, model.ffn_dim, vocab);
  const model::kernels::GemmChoice c = model::kernels::fastest_gemm_backend(shapes, 1.0);
  if (c.onednn_flops_per_s == 0)
    return {
        GemmBackend::kMkl, "mkl (auto: oneDNN unavailable: " + model::kernels::onednn_unavailable_reason() + ")", {}};
  return {
      c.backend,
      fmt::format("{} (auto: oneDNN {:.0f} vs MKL {:.0f} GFLOP/s on the model's shapes)",
                  model::kernels::gemm_backend_name(c.backend), c.onednn_flops_per_s / 1e9, c.mkl_flops_per_s / 1e9),
      {}};
}

}  // namespace

int64_t gemm_rows_timed(const config::Config& cfg) { return std::min<int64_t>(cfg.data.max_tokens, 2048); }

int64_t vocab_of(const config::Config& cfg, const model::ModelConfig& model) {
  return model.vocab_size > 0 ? model.vocab_size : cfg.data.vocab_size;
}

std::string plan_text(const std::vector<model::kernels::WeightShape>& shapes) {
  return shapes.empty() ? "none" : model::kernels::weight_shapes_text(shapes);
}

void require_onednn_if_asked(const config::Config& cfg, const torch::Device& device) {
  if (cfg.train.gemm == config::Gemm::kOneDnn && !device.is_cuda() && !model::kernels::onednn_available())
    throw config::ConfigError("config key 'train.gemm' = onednn: " + model::kernels::onednn_unavailable_reason());
}

GemmBackend rank0_backend(GemmBackend mine, dist::Communicator& comm) {
  auto pick = torch::tensor({mine == GemmBackend::kOneDnn ? 1 : 0}, torch::kInt64).to(comm.device());
  comm.broadcast(pick, 0);
  return pick.item<int64_t>() == 1 ? GemmBackend::kOneDnn : GemmBackend::kMkl;
}

std::vector<model::kernels::WeightShape> rank0_subset(const std::vector<model::kernels::WeightShape>& all,
                                                      const std::vector<model::kernels::WeightShape>& picked,
                                                      dist::Communicator& comm) {
  auto flags = torch::zeros({static_cast<int64_t>(all.size())}, torch::kInt64);
  for (size_t i = 0; i < all.size(); ++i)
    flags[static_cast<int64_t>(i)] = std::count(picked.begin(), picked.end(), all[i]) > 0 ? 1 : 0;
  flags = flags.to(comm.device());
  comm.broadcast(flags, 0);
  flags = flags.cpu();
  std::vector<model::kernels::WeightShape> subset;
  for (size_t i = 0; i < all.size(); ++i)
    if (flags[static_cast<int64_t>(i)].item<int64_t>() == 1) subset.push_back(all[i]);
  return subset;
}

GemmDecision decide_gemm_backend(const config::Config& cfg, const model::ModelConfig& model, const torch::Device& device,
                                 bool measure_here) {
  if (device.is_cuda()) return {GemmBackend::kMkl, "mkl (CUDA: no CPU GEMM)", {}};
  require_onednn_if_asked(cfg, device);
  switch (cfg.train.gemm) {
    case config::Gemm::kOneDnn:
      return {GemmBackend::kOneDnn, "onednn (train.gemm)", {}};
    case config::Gemm::kAuto:
      if (measure_here) return measure(cfg, model);
      return {GemmBackend::kMkl, "", {}};
    case config::Gemm::kMkl:
      break;
  }
  return {GemmBackend::kMkl, "mkl (train.gemm)", {}};
}

GemmDecision choose_gemm_backend(const config::Config& cfg, const model::ModelConfig& model, dist::Communicator& comm,
                                 const torch::Device& device) {
  GemmDecision d = decide_gemm_backend(cfg, model, device, /*measure_here=*/comm.rank() == 0);
  if (cfg.train.gemm == config::Gemm::kAuto && !device.is_cuda()) {
    d.backend = rank0_backend(d.backend, comm);
    if (comm.rank() != 0) d.why = std::string(model::kernels::gemm_backend_name(d.backend)) + " (auto: rank 0's pick)";
  }
  model::kernels::set_gemm_backend(d.backend);
  return d;
}

void choose_transposed_forward(const config::Config& cfg, const model::ModelConfig& model, dist::Communicator& comm,
                               GemmDecision& decision) {
  namespace k = model::kernels;
  decision.transposed_forward.clear();
  if (decision.backend == GemmBackend::kOneDnn) {
    const auto shapes = k::transformer_weight_shapes(model.d_model, model.ffn_dim, vocab_of(cfg, model));
    std::vector<k::WeightShape> faster;
    if (comm.rank() == 0) faster = k::faster_transposed(k::time_forward_both_ways(shapes, gemm_rows_timed(cfg), 0.5));
    decision.transposed_forward = rank0_subset(shapes, faster, comm);
    decision.why += "; forward on transposed weights: " + plan_text(decision.transposed_forward);
  }
  k::set_transposed_forward(decision.transposed_forward);
}

GemmDecision choose_training_gemm(const config::Config& cfg, const model::ModelConfig& model, dist::Communicator& comm,
                                  const torch::Device& device) {
  GemmDecision d = choose_gemm_backend(cfg, model, comm, device);
  choose_transposed_forward(cfg, model, comm, d);
  return d;
}

std::string keep_checkpoint_gemm(const config::Config& cfg, std::optional<GemmBackend> saved_backend,
                                 const std::optional<std::string>& saved_plan, GemmDecision& decision) {
  std::string note;
  if (cfg.train.gemm == config::Gemm::kAuto && saved_backend && *saved_backend != decision.backend) {
    const GemmBackend want = *saved_backend;
    if (want == GemmBackend::kOneDnn && !model::kernels::onednn_available())
      return "the checkpoint was trained with the oneDNN GEMM, which is unavailable here: continuing with mkl";
    model::kernels::set_gemm_backend(want);
    model::kernels::set_transposed_forward({});  // measured for the other library, if at all
    decision = {want, std::string(model::kernels::gemm_backend_name(want)) + " (auto: kept from the checkpoint)", {}};
    note = "gemm: " + decision.why + " instead of this start's measured pick";
  }
  if (decision.backend != GemmBackend::kOneDnn || !saved_plan) return note;
  std::vector<model::kernels::WeightShape> plan;
  try {
    plan = model::kernels::parse_weight_shapes(*saved_plan);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("checkpoint field 'gemm_transposed_forward': ") + e.what());
  }
  if (plan == model::kernels::transposed_forward()) return note;
  model::kernels::set_transposed_forward(plan);
  decision.transposed_forward = plan;
  return note + (note.empty() ? "" : "; ") + "gemm: forward on transposed weights: " + plan_text(plan) +
         " (kept from the checkpoint instead of this start's measured pick)";
}

bool wants_cpu_bf16(const config::Config& cfg, const torch::Device& device) {
  if (cfg.train.precision != config::Precision::kBf16 || !device.is_cpu()) return false;
  if (const std::string why = model::kernels::bf16_gemm_problem(); !why.empty())
    throw config::ConfigError("train.precision=bf16 is unavailable here: " + why + "; use train.precision=fp32");
  return true;
}

const char* choose_attention_kernel(const config::Config& cfg) {
  const auto kernel = cfg.train.attention == config::Attention::kShort ? model::kernels::AttentionKernel::kShort
                                                                        : model::kernels::AttentionKernel::kSdpa;
  model::kernels::set_attention_kernel(kernel);
  return model::kernels::attention_kernel_name(kernel);
}

}  // namespace nmt::runtime
