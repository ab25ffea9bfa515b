#include "runtime/bf16_speed_check.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "model/kernels/gemm_plan.h"
#include "runtime/decoding_gemm_choice.h"
#include "runtime/gemm_choice.h"

namespace nmt::runtime {
namespace {

namespace k = model::kernels;

}  // namespace

Bf16SpeedCheck word_bf16_speed(const k::Bf16Speed& speed, const std::string& what) {
  // Decided on the ratio as printed, so that the line and the warning never disagree.
  const double ratio = std::round(100.0 * speed.bf16_flops_per_s / speed.fp32_flops_per_s) / 100.0;
  Bf16SpeedCheck check;
  check.text = fmt::format("bf16 {:.0f} vs fp32 {:.0f} GFLOP/s on {} ({:.2f}x)", speed.bf16_flops_per_s / 1e9,
                           speed.fp32_flops_per_s / 1e9, what, ratio);
  if (ratio < 1.0)
    check.warning = fmt::format(
        "warning: train.precision=bf16 is slower than fp32 on this CPU: {}; it has bf16 instructions ({}), but "
        "they run no faster than its fp32 ones, so train.precision=fp32 would run faster here",
        check.text, k::bf16_isa_name(k::cpu_bf16_isa()));
  return check;
}

Bf16SpeedCheck check_training_bf16_speed(const config::Config& cfg, const model::ModelConfig& model) {
  const auto shapes =
      k::transformer_gemm_shapes(gemm_rows_timed(cfg), model.d_model, model.ffn_dim, vocab_of(cfg, model));
  // Against the fp32 library this run would use (train.gemm, chosen before the precision).
  return word_bf16_speed(k::time_bf16_against_fp32(shapes, 0.5, k::gemm_backend()), "the model's products");
}

Bf16SpeedCheck check_decoding_bf16_speed(const config::Config& cfg, const model::ModelConfig& model) {
  std::vector<k::GemmShape> forward;  // y = x W^T: decoding multiplies by the weights as stored
  for (const k::WeightShape& w : k::transformer_weight_shapes(model.d_model, model.ffn_dim, vocab_of(cfg, model)))
    forward.push_back({kDecodingRowsTimed, w.out, w.in, false, true});
  // Against fp32 decoding at its best: oneDNN where it loads (fp32 decoding's pick on every
  // kind measured, bench/README.md) on kept transposed weights, the copy it keeps.
  const auto fp32 = k::onednn_available() ? k::GemmBackend::kOneDnn : k::GemmBackend::kMkl;
  return word_bf16_speed(k::time_bf16_against_fp32(forward, 0.3, fp32, /*fp32_on_transposed_copy=*/true),
                         "a decoding step's products");
}

}  // namespace nmt::runtime
