#include "model/kernels/bf16_gemm.h"

#include <cpuid.h>

#include <stdexcept>

#include "model/kernels/onednn_matmul.h"
#include "model/kernels/timing_operands.h"

namespace nmt::model::kernels {
namespace {

// The distance between rows: a one-row tensor may carry any stride (even 0) in its first
// dimension, which the library must not see.
int64_t leading_dimension(const torch::Tensor& t) { return t.size(0) == 1 ? t.size(1) : t.stride(0); }

void check_operand(const torch::Tensor& t, const char* name, torch::ScalarType type) {
  TORCH_CHECK(t.dim() == 2 && t.scalar_type() == type && t.device().is_cpu() && (t.size(1) == 1 || t.stride(1) == 1) &&
                  leading_dimension(t) >= t.size(1) && t.size(0) > 0 && t.size(1) > 0,
              "gemm_bf16: ", name, " must be a non-empty 2-D ", type, " CPU tensor with contiguous rows, got ",
              t.sizes(), " ", t.scalar_type(), " strides ", t.strides());
}

}  // namespace

Bf16Isa cpu_bf16_isa() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 22))) return Bf16Isa::kAmx;  // AMX-BF16
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5))) return Bf16Isa::kAvx512Bf16;
  return Bf16Isa::kNone;
}

const char* bf16_isa_name(Bf16Isa isa) {
  switch (isa) {
    case Bf16Isa::kAmx: return "AMX";
    case Bf16Isa::kAvx512Bf16: return "AVX512_BF16";
    default: return "none";
  }
}

std::string bf16_gemm_problem() {
  static const std::string problem =  // decided once: CPUID is a VM exit under KVM
      cpu_bf16_isa() == Bf16Isa::kNone
          ? "this CPU has neither the avx512_bf16 nor the amx_bf16 flag (CPUID), so no bf16 instructions"
          : onednn_matmul_problem();
  return problem;
}

void gemm_bf16(const torch::Tensor& a, bool trans_a, const torch::Tensor& b, bool trans_b, torch::Tensor& c,
               bool accumulate) {
  check_operand(a, "A", torch::kBFloat16);
  check_operand(b, "B", torch::kBFloat16);
  check_operand(c, "C", torch::kFloat32);
  const int64_t am = trans_a ? a.size(1) : a.size(0), ak = trans_a ? a.size(0) : a.size(1);
  const int64_t bk = trans_b ? b.size(1) : b.size(0), bn = trans_b ? b.size(0) : b.size(1);
  TORCH_CHECK(am == c.size(0) && bn == c.size(1) && ak == bk, "gemm_bf16: shapes do not match: op(A) [", am, ", ", ak,
              "] op(B) [", bk, ", ", bn, "] C ", c.sizes());
  if (const std::string why = bf16_gemm_problem(); !why.empty())
    throw std::runtime_error("bf16 GEMM unavailable: " + why);
  const auto view = [](const torch::Tensor& t, bool trans) {
    return MatrixView{t.data_ptr(), trans ? t.size(1) : t.size(0), trans ? t.size(0) : t.size(1), leading_dimension(t),
                      trans};
  };
  onednn_bf16_matmul(view(a, trans_a), view(b, trans_b), c.data_ptr<float>(), leading_dimension(c), accumulate);
}

Bf16Speed time_bf16_against_fp32(const std::vector<GemmShape>& shapes, double seconds, GemmBackend fp32,
                                 bool fp32_on_transposed_copy) {
  torch::NoGradGuard no_grad;
  const TimingOperands ops(shapes, /*with_bf16=*/true);
  std::vector<torch::Tensor> fp32_b;  // B as the fp32 side multiplies it: as stored, or its kept transposed copy
  for (size_t i = 0; i < shapes.size(); ++i)
    fp32_b.push_back(shapes[i].trans_b && fp32_on_transposed_copy ? ops[i].b.t().contiguous() : ops[i].b);
  // way 0: fp32, way 1: bf16
  const auto best = fastest_of_two_ways(shapes.size(), seconds, [&](size_t i, int way) {
    const GemmShape& s = shapes[i];
    auto c = ops[i].c;
    if (way == 0)
      sgemm(fp32, ops[i].a, s.trans_a, fp32_b[i], s.trans_b && !fp32_on_transposed_copy, c, false);
    else
      gemm_bf16(ops[i].a16, s.trans_a, ops[i].b16, s.trans_b, c, false);
  });
  double flops = 0, fp32_seconds = 0, bf16_seconds = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    flops += 2.0 * static_cast<double>(shapes[i].m * shapes[i].n * shapes[i].k);
    fp32_seconds += best[i][0];
    bf16_seconds += best[i][1];
  }
  return {flops / bf16_seconds, flops / fp32_seconds};
}

std::string bf16_gemm_kernel() { return onednn_matmul_kernel(); }

std::string bf16_gemm_description() { return "oneDNN matmul " + onednn_matmul_kernel() + ", " + onednn_bf16_isa(); }

}  // namespace nmt::model::kernels
