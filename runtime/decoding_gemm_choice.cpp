#include "runtime/decoding_gemm_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "model/kernels/bf16_gemm.h"
#include "model/kernels/gemm_plan.h"
#include "model/kernels/linear.h"
#include "runtime/bf16_speed_check.h"
#include "runtime/cuda_math.h"
#include "runtime/device.h"
#include "runtime/memory_estimate.h"

namespace nmt::runtime {
namespace {

namespace k = model::kernels;
using k::GemmBackend;

constexpr double kSecondsPerLibrary = 0.15;
constexpr double kMargin = 1.05;

struct LibraryTiming {
  GemmBackend backend;
  std::vector<k::ForwardTiming> timings;
  double seconds = 0, flops = 0;  // each weight once, by its better way
};

LibraryTiming time_library(GemmBackend backend, const std::vector<k::WeightShape>& shapes) {
  LibraryTiming t{backend, k::time_forward_both_ways(shapes, kDecodingRowsTimed, kSecondsPerLibrary,
                                                     k::TransposedCopy::kOnce, backend)};
  for (const k::ForwardTiming& f : t.timings) {
    t.seconds += std::min(f.as_stored_s, f.transposed_s);
    t.flops += 2.0 * static_cast<double>(kDecodingRowsTimed * f.shape.out * f.shape.in);
  }
  return t;
}

GemmDecision decided(const LibraryTiming& t, std::string why) {
  GemmDecision d{t.backend, std::move(why), k::faster_transposed(t.timings, kMargin)};
  d.why += "; kept transposed weights: " + plan_text(d.transposed_forward);
  return d;
}

}  // namespace

GemmDecision decide_decoding_gemm(const config::Config& cfg, const model::ModelConfig& model,
                                  const torch::Device& device) {
  if (device.is_cuda()) return {GemmBackend::kMkl, "mkl (CUDA: no CPU GEMM)", {}};
  // The timing allocates each weight: a model that cannot fit is refused first, as at its load.
  model::ModelConfig sized = model;
  sized.vocab_size = vocab_of(cfg, model);
  runtime::check_fits(sized, cfg, device, /*training=*/false);
  const auto shapes = k::transformer_weight_shapes(model.d_model, model.ffn_dim, sized.vocab_size);
  switch (cfg.train.gemm) {
    case config::Gemm::kMkl:
      return decided(time_library(GemmBackend::kMkl, shapes), "mkl (train.gemm)");
    case config::Gemm::kOneDnn:
      require_onednn_if_asked(cfg, device);
      return decided(time_library(GemmBackend::kOneDnn, shapes), "onednn (train.gemm)");
    case config::Gemm::kAuto:
      break;
  }
  const LibraryTiming mkl = time_library(GemmBackend::kMkl, shapes);
  if (!k::onednn_available())
    return decided(mkl, "mkl (auto: oneDNN unavailable: " + k::onednn_unavailable_reason() + ")");
  const LibraryTiming onednn = time_library(GemmBackend::kOneDnn, shapes);
  const LibraryTiming& pick = mkl.seconds >= kMargin * onednn.seconds ? onednn : mkl;
  return decided(pick, fmt::format("{} (auto: oneDNN {:.0f} vs MKL {:.0f} GFLOP/s on a decoding step's products)",
                                   k::gemm_backend_name(pick.backend), onednn.flops / onednn.seconds / 1e9,
                                   mkl.flops / mkl.seconds / 1e9));
}

void apply_decoding_gemm(const GemmDecision& decision) {
  k::set_gemm_backend(decision.backend);
  k::set_inference_transposed(decision.transposed_forward);
}

GemmDecision choose_decoding_gemm(const config::Config& cfg, const model::ModelConfig& model, dist::Communicator& comm,
                                  const torch::Device& device) {
  require_onednn_if_asked(cfg, device);  // on every rank, before rank 0 times
  GemmDecision d;
  if (comm.rank() == 0 || device.is_cuda()) d = decide_decoding_gemm(cfg, model, device);
  if (!device.is_cuda()) {
    const auto shapes = k::transformer_weight_shapes(model.d_model, model.ffn_dim, vocab_of(cfg, model));
    d.backend = rank0_backend(d.backend, comm);
    d.transposed_forward = rank0_subset(shapes, d.transposed_forward, comm);
    if (comm.rank() != 0)
      d.why = std::string(k::gemm_backend_name(d.backend)) +
              " (rank 0's pick); kept transposed weights: " + plan_text(d.transposed_forward);
  }
  apply_decoding_gemm(d);
  return d;
}

DecodingSetup set_up_decoding(const config::Config& cfg, const torch::Device& device, dist::Communicator* comm) {
  // train.precision=bf16 on a CPU: every linear layer multiplies on kept bf16 weights, so no
  // fp32 plan is kept (refused here, before anything, where the CPU cannot). Rank 0 times the
  // bf16 products against fp32's for the set-up line and the warning (bf16_speed_check.h).
  const bool bf16 = wants_cpu_bf16(cfg, device);
  k::set_inference_precision(bf16 ? k::LinearPrecision::kBf16 : k::LinearPrecision::kFp32);
  GemmDecision gemm;
  Bf16SpeedCheck speed;
  if (bf16) {
    require_onednn_if_asked(cfg, device);
    if (comm == nullptr || comm->rank() == 0) {
      model::ModelConfig sized = cfg.model;  // refused as at its load, before the timing allocates
      sized.vocab_size = vocab_of(cfg, cfg.model);
      check_fits(sized, cfg, device, /*training=*/false);
      speed = check_decoding_bf16_speed(cfg, cfg.model);
    }
    gemm = {k::gemm_backend(),
            "bf16 products (" + k::bf16_gemm_description() + (speed.text.empty() ? "" : "; " + speed.text) +
                "), no fp32 plan",
            {}};
    apply_decoding_gemm(gemm);
  } else if (comm != nullptr) {
    gemm = choose_decoding_gemm(cfg, cfg.model, *comm, device);
  } else {
    gemm = decide_decoding_gemm(cfg, cfg.model, device);
    apply_decoding_gemm(gemm);
  }
  const char* attention = choose_attention_kernel(cfg);
  configure_cuda_math(cfg, device);
  return {decoding_setup_text(gemm, device, cfg.train.threads, attention), speed.warning};
}

std::string decoding_setup_text(const GemmDecision& decision, const torch::Device& device, int64_t threads,
                                const char* attention) {
  return fmt::format("device {}, {} threads, gemm {}, attention {}", describe_device(device), threads, decision.why,
                     attention);
}

}  // namespace nmt::runtime
