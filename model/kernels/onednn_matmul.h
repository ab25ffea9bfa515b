#pragma once
// oneDNN's matmul primitive for bf16 operands and an fp32 result, on raw pointers: the part of
// bf16_gemm.h that talks to libdnnl.so.2. It is built without LibTorch's include directories
// (a library of its own, nmt_onednn), because LibTorch ships the headers of its own oneDNN 3.x,
// whose C API differs from Debian's 2.6 that is loaded here.
#include <cstdint>
#include <string>

namespace nmt::model::kernels {

// One operand as the product uses it, [rows, cols], over storage whose rows are contiguous
// and `ld` apart: transposed, element (i, j) is data[j * ld + i]; else data[i * ld + j].
struct MatrixView {
  const void* data;
  int64_t rows, cols, ld;
  bool transposed;
};

// "" where libdnnl.so.2 has the matmul API, lets oneDNN use bf16 instructions, and made every
// layout's primitive (made once, on the first call); else why not.
const std::string& onednn_matmul_problem();

// c[m, n] (row stride ldc, fp32) = a[m, k] b[k, n] (+ c when `accumulate`), a and b bf16.
// Throws std::runtime_error naming the oneDNN call that failed.
void onednn_bf16_matmul(const MatrixView& a, const MatrixView& b, float* c, int64_t ldc, bool accumulate);

// oneDNN's name for the products' kernel ("gemm:jit"), "" where unavailable.
std::string onednn_matmul_kernel();

// The bf16 instructions oneDNN may use here, by its own effective ISA (the CPU's, capped by
// DNNL_MAX_CPU_ISA): "AMX" or "AVX512_BF16"; "" where unavailable.
const std::string& onednn_bf16_isa();

}  // namespace nmt::model::kernels
