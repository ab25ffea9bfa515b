#pragma once
// bf16 matrix products on the CPU: bf16 operands, products summed in fp32, an fp32 result,
// through oneDNN's matmul primitive (Debian's libdnnl.so.2, onednn_library.h), which runs them
// on the CPU's bf16 instructions: AMX's tiles where the CPU reports them, else AVX512_BF16's dot
// products (both measured, bench/README.md).
//
// Why oneDNN's matmul: on a 2-core AMD EPYC Zen 4 (AVX512_BF16) at the recipe's products
// (1,536 rows, d_model 256, FFN 1,024, 8k vocabulary), its bf16 matmul ran 360-420 GFLOP/s
// against dnnl_sgemm's fp32 190-220, every product of the forward and both backward ones
// (transposed operands included). LibTorch's own bf16
// mm ran 330-420 but returns bf16 only on the CPU (mm's out_dtype is CUDA-only), a rounding
// and a pass more; oneDNN's fpmath_mode=bf16 on fp32 operands was ignored there (fp32
// speed, bit-identical results). Measured 2026-11-25: build/bench/gemm (onednn_bf16 column) and
// probes of oneDNN alone (`git show a23d15c^:bench/README.md`; the current bf16 tables are
// in bench/README.md).
//
// One primitive per layout (transpositions, accumulation), its dimensions given at run time
// (onednn_matmul.cpp says why); oneDNN 2.6 runs those on its gemm:jit kernel.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "model/kernels/gemm.h"

namespace nmt::model::kernels {

// The CPU's bf16 instructions, by its CPUID flags (not its vendor's name).
enum class Bf16Isa { kNone, kAvx512Bf16, kAmx };
Bf16Isa cpu_bf16_isa();
const char* bf16_isa_name(Bf16Isa isa);  // "none", "AVX512_BF16", "AMX"

// "" where bf16 products can run here; else why not: the CPU flags it lacks, the library, or
// oneDNN's refusal to make the products' primitives (all are made on the first call).
std::string bf16_gemm_problem();

// c = op(a) op(b), or c += op(a) op(b) when `accumulate`: a and b 2-D bf16 CPU tensors with
// contiguous rows, c 2-D fp32 with contiguous rows. Throws std::runtime_error where
// bf16_gemm_problem() is not empty, or when oneDNN refuses the product.
void gemm_bf16(const torch::Tensor& a, bool trans_a, const torch::Tensor& b, bool trans_b, torch::Tensor& c,
               bool accumulate);

// oneDNN's name for the products' kernel ("gemm:jit"), "" where unavailable.
std::string bf16_gemm_kernel();

// bf16 products against fp32 ones through `fp32` on `shapes`, each product by its fastest run
// of each, the two alternating for about `seconds` (fastest_of_two_ways: at least 3 runs each).
// `fp32_on_transposed_copy`: the fp32 side multiplies B as stored [k, n] where the shape asks
// for B transposed, as decoding does on its kept transposed weights (gemm_plan.h).
// Why measure: the CPU flags say that bf16 instructions exist, not how fast they run. On an
// Intel Xeon (family 6 model 207) whose VM hides AMX, AVX512_BF16 alone ran oneDNN's bf16
// products at 130-162 GFLOP/s against fp32's 180-311 (build/bench/gemm, bench/README.md).
struct Bf16Speed {
  double bf16_flops_per_s = 0, fp32_flops_per_s = 0;
};
Bf16Speed time_bf16_against_fp32(const std::vector<GemmShape>& shapes, double seconds, GemmBackend fp32,
                                 bool fp32_on_transposed_copy = false);

// What the start line says of bf16 products: "oneDNN matmul gemm:jit, AVX512_BF16" (the ISA
// oneDNN may use, not only the CPU's flags).
std::string bf16_gemm_description();

}  // namespace nmt::model::kernels
