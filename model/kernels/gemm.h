#pragma once
// fp32 matrix products on the CPU through one of two libraries, chosen once per process:
//
//   * MKL, LibTorch's own (at::mm / at::addmm): what every LibTorch op uses;
//   * oneDNN's dnnl_sgemm (Debian's libdnnl.so.2, loaded at run time).
//
// Why two: the torch wheel links MKL statically, and MKL takes slower paths on CPUs that are
// not GenuineIntel (pytorch/builder#504); CTranslate2 uses oneDNN there for the same reason.
// On a 2-core AMD EPYC (Zen 4), dnnl_sgemm ran the model's products 1.17-1.21x faster than
// MKL in all (build/bench/gemm; `git show a23d15c^:bench/README.md`). Which one wins is measured, not guessed from
// the vendor: fastest_gemm_backend().
//
// libdnnl.so.2 is opened with RTLD_DEEPBIND: LibTorch carries its own, newer oneDNN, and a
// few of its internal symbols have the same names as libdnnl's; deep binding keeps each
// library on its own code. Where the library is missing (or under AddressSanitizer, which
// refuses RTLD_DEEPBIND) only MKL is available, and onednn_unavailable_reason() says why.
#include <torch/torch.h>

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nmt::model::kernels {

enum class GemmBackend { kMkl, kOneDnn };

const char* gemm_backend_name(GemmBackend backend);  // "mkl", "onednn"
// The inverse of gemm_backend_name; nullopt for any other text (a checkpoint's field, say).
std::optional<GemmBackend> parse_gemm_backend(const std::string& name);

// Whether dnnl_sgemm could be loaded (tried once, on first call); else the reason.
bool onednn_available();
std::string onednn_unavailable_reason();

// The backend linear() uses in this process (kMkl until set). Throws std::runtime_error
// for kOneDnn where it is unavailable.
void set_gemm_backend(GemmBackend backend);
GemmBackend gemm_backend();

// c = op(a) op(b), or c += op(a) op(b) when `accumulate`; op transposes when asked.
// 2-D float32 CPU tensors whose rows are contiguous (stride(1) == 1); c is [m, n].
void sgemm(GemmBackend backend, const torch::Tensor& a, bool trans_a, const torch::Tensor& b, bool trans_b,
           torch::Tensor& c, bool accumulate);

// One product of a model's forward or backward: op(A) is [m, k], op(B) is [k, n].
struct GemmShape {
  int64_t m, n, k;
  bool trans_a, trans_b;
};

// The fp32 products of one update of a Transformer layer stack with `rows` tokens per
// micro-batch: projections, FFN and output projection, forward and both backward products.
std::vector<GemmShape> transformer_gemm_shapes(int64_t rows, int64_t d_model, int64_t ffn_dim, int64_t vocab);

// FLOP/s of `backend` over `shapes`, each run for about seconds / shapes.size(), with the
// current intra-op threads.
double gemm_flops_per_s(GemmBackend backend, const std::vector<GemmShape>& shapes, double seconds);

// For each of `count` products, the seconds of its fastest run done each of two ways:
// run(i, way) does product i one way (0 or 1). One untimed call of each first (JIT, packing
// buffers: a process's first calls run slow), then the two ways alternate call by call until
// about `seconds` are spent, at least 3 runs each. The fastest run is what a product costs
// when nothing else is running; a mean over a few runs lets one burst of noise on a shared
// machine decide (a mean can pick a library 0.89x as fast as the other in training).
std::vector<std::array<double, 2>> fastest_of_two_ways(size_t count, double seconds,
                                                       const std::function<void(size_t, int)>& run);

struct GemmChoice {
  GemmBackend backend = GemmBackend::kMkl;
  double mkl_flops_per_s = 0, onednn_flops_per_s = 0;  // 0: not measured (unavailable)
};
// Times both backends on `shapes` (each product by its fastest run of each library, the two
// alternating, for about `seconds`) and picks oneDNN only where it is at least `margin` times
// MKL's speed: a near tie stays on MKL, LibTorch's own.
GemmChoice fastest_gemm_backend(const std::vector<GemmShape>& shapes, double seconds, double margin = 1.05);

}  // namespace nmt::model::kernels
