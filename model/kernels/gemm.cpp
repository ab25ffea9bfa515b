#include "model/kernels/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>

#include "model/kernels/onednn_library.h"
#include "model/kernels/timing_operands.h"

namespace nmt::model::kernels {
namespace {

using DnnlSgemm = decltype(&dnnl_sgemm);

struct OneDnn {
  DnnlSgemm sgemm = nullptr;
  std::string why_not;
};

const OneDnn& onednn() {
  static OneDnn lib;
  static std::once_flag once;
  std::call_once(once, [] {
    if (!onednn_library()) {
      lib.why_not = onednn_library_problem();
      return;
    }
    lib.sgemm = onednn_function<DnnlSgemm>("dnnl_sgemm");
    if (!lib.sgemm) lib.why_not = "libdnnl.so.2 has no dnnl_sgemm";
  });
  return lib;
}

GemmBackend current = GemmBackend::kMkl;

// Rows contiguous and apart: a one-row tensor may carry any stride (even 0) in its first
// dimension, which the BLAS leading dimension must not see.
void check_operand(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.dim() == 2 && t.scalar_type() == torch::kFloat32 && t.device().is_cpu() &&
                  (t.size(1) <= 1 || t.stride(1) == 1) && (t.size(0) <= 1 || t.stride(0) >= t.size(1)),
              "sgemm: ", name, " must be a 2-D float32 CPU tensor with contiguous, non-overlapping rows, got ",
              t.sizes(), " ", t.scalar_type(), " strides ", t.strides());
}

int64_t leading_dimension(const torch::Tensor& t) { return t.size(0) <= 1 ? std::max<int64_t>(t.size(1), 1) : t.stride(0); }

void onednn_sgemm(const torch::Tensor& a, bool trans_a, const torch::Tensor& b, bool trans_b, torch::Tensor& c,
                  bool accumulate) {
  const int64_t m = c.size(0), n = c.size(1), k = trans_a ? a.size(0) : a.size(1);
  const dnnl_status_t status =
      onednn().sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a.data_ptr<float>(), leading_dimension(a),
                     b.data_ptr<float>(), leading_dimension(b), accumulate ? 1.0f : 0.0f, c.data_ptr<float>(),
                     leading_dimension(c));
  TORCH_CHECK(status == dnnl_success, "dnnl_sgemm failed with status ", static_cast<int>(status), " for m ", m, " n ",
              n, " k ", k);
}

}  // namespace

const char* gemm_backend_name(GemmBackend backend) { return backend == GemmBackend::kOneDnn ? "onednn" : "mkl"; }

std::optional<GemmBackend> parse_gemm_backend(const std::string& name) {
  for (GemmBackend b : {GemmBackend::kMkl, GemmBackend::kOneDnn})
    if (name == gemm_backend_name(b)) return b;
  return std::nullopt;
}

bool onednn_available() { return onednn().sgemm != nullptr; }
std::string onednn_unavailable_reason() { return onednn().why_not; }

void set_gemm_backend(GemmBackend backend) {
  if (backend == GemmBackend::kOneDnn && !onednn_available())
    throw std::runtime_error("the oneDNN GEMM is not available: " + onednn_unavailable_reason());
  current = backend;
}

GemmBackend gemm_backend() { return current; }

void sgemm(GemmBackend backend, const torch::Tensor& a, bool trans_a, const torch::Tensor& b, bool trans_b,
           torch::Tensor& c, bool accumulate) {
  check_operand(a, "A");
  check_operand(b, "B");
  check_operand(c, "C");
  const auto op_a = trans_a ? a.t() : a, op_b = trans_b ? b.t() : b;
  TORCH_CHECK(op_a.size(0) == c.size(0) && op_b.size(1) == c.size(1) && op_a.size(1) == op_b.size(0),
              "sgemm: shapes do not match: op(A) ", op_a.sizes(), " op(B) ", op_b.sizes(), " C ", c.sizes());
  if (backend == GemmBackend::kOneDnn) return onednn_sgemm(a, trans_a, b, trans_b, c, accumulate);
  if (accumulate)
    at::addmm_out(c, c, op_a, op_b);
  else
    at::mm_out(c, op_a, op_b);
}

std::vector<GemmShape> transformer_gemm_shapes(int64_t rows, int64_t d, int64_t f, int64_t vocab) {
  std::vector<GemmShape> shapes;
  // y = x W^T (forward), dx = dy W, dW = dy^T x, for each [out, in] weight.
  for (auto [out, in] : {std::pair{3 * d, d}, std::pair{d, d}, std::pair{f, d}, std::pair{d, f}, std::pair{vocab, d}}) {
    shapes.push_back({rows, out, in, false, true});
    shapes.push_back({rows, in, out, false, false});
    shapes.push_back({out, in, rows, true, false});
  }
  return shapes;
}

double gemm_flops_per_s(GemmBackend backend, const std::vector<GemmShape>& shapes, double seconds) {
  double flops = 0, spent = 0;
  // A generator of its own: measuring must not move the default one, which seeds training.
  auto gen = at::detail::createCPUGenerator(1);
  for (const GemmShape& s : shapes) {
    auto a = s.trans_a ? at::randn({s.k, s.m}, gen) : at::randn({s.m, s.k}, gen);
    auto b = s.trans_b ? at::randn({s.n, s.k}, gen) : at::randn({s.k, s.n}, gen);
    auto c = torch::empty({s.m, s.n});
    sgemm(backend, a, s.trans_a, b, s.trans_b, c, false);  // untimed: packing buffers, JIT
    const auto t0 = std::chrono::steady_clock::now();
    double secs = 0;
    int reps = 0;
    do {
      sgemm(backend, a, s.trans_a, b, s.trans_b, c, false);
      ++reps;
      secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (secs < seconds / static_cast<double>(shapes.size()));
    flops += 2.0 * static_cast<double>(s.m * s.n * s.k) * reps;
    spent += secs;
  }
  return flops / spent;
}

std::vector<std::array<double, 2>> fastest_of_two_ways(size_t count, double seconds,
                                                       const std::function<void(size_t, int)>& run) {
  auto seconds_of = [&](size_t i, int way) {
    const auto t0 = std::chrono::steady_clock::now();
    run(i, way);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (size_t i = 0; i < count; ++i)
    for (int way : {0, 1}) run(i, way);
  std::vector<std::array<double, 2>> best(count, {1e30, 1e30});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (int round = 0; round < 3 || std::chrono::steady_clock::now() < deadline; ++round)
    for (size_t i = 0; i < count; ++i)
      for (int way : {0, 1}) best[i][way] = std::min(best[i][way], seconds_of(i, way));
  return best;
}

GemmChoice fastest_gemm_backend(const std::vector<GemmShape>& shapes, double seconds, double margin) {
  GemmChoice choice;
  if (!onednn_available()) return choice;
  const TimingOperands ops(shapes, /*with_bf16=*/false);
  // way 0: MKL, way 1: oneDNN
  const auto best = fastest_of_two_ways(shapes.size(), seconds, [&](size_t i, int way) {
    const GemmShape& s = shapes[i];
    auto c = ops[i].c;
    sgemm(way == 0 ? GemmBackend::kMkl : GemmBackend::kOneDnn, ops[i].a, s.trans_a, ops[i].b, s.trans_b, c, false);
  });
  double flops = 0, mkl_seconds = 0, onednn_seconds = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    flops += 2.0 * static_cast<double>(shapes[i].m * shapes[i].n * shapes[i].k);
    mkl_seconds += best[i][0];
    onednn_seconds += best[i][1];
  }
  choice.mkl_flops_per_s = flops / mkl_seconds;
  choice.onednn_flops_per_s = flops / onednn_seconds;
  if (choice.onednn_flops_per_s >= margin * choice.mkl_flops_per_s) choice.backend = GemmBackend::kOneDnn;
  return choice;
}

}  // namespace nmt::model::kernels
