// gemm [ROWS] [THREADS] [MILLISECONDS]: GEMM speed of each library at the model's shapes,
// side by side in one process. fp32: MKL (LibTorch's torch::mm), oneDNN (dnnl_sgemm, what
// train.gemm=onednn uses) and BLIS (cblas_sgemm of Debian's libblis.so.4, measured only); and
// bf16 operands with fp32 sums through oneDNN's matmul (gemm_bf16, what train.precision=bf16
// uses on a CPU; 0 where the CPU has no bf16 instructions). For the recipe's shape (d_model
// 256, FFN 1024) and the tiny one (128, 256), both with the 8k vocabulary, at ROWS tokens per
// micro-batch; plus the 2048^3 product on which `train --benchmark` measures the MFU peak.
// Then each weight's forward as stored and on a transposed copy: oneDNN's at ROWS rows with
// the copy made per call (training), and each library's at a decoding step's 256 rows with
// the copy kept (decoding); and bf16 decoding's forward per weight, as stored and on a kept
// transposed copy, at 256 and 32 rows. One JSON line per shape set: GFLOP/s of each library, and each
// product's figures under "products".
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "model/kernels/bf16_gemm.h"
#include "model/kernels/gemm.h"
#include "model/kernels/gemm_plan.h"

namespace {

using nmt::model::kernels::GemmBackend;
using nmt::model::kernels::GemmShape;

// BLIS through its CBLAS layer, opened apart (RTLD_DEEPBIND) so that its cblas_sgemm is not
// confused with the MKL one inside LibTorch.
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
struct Blis {
  CblasSgemm sgemm = nullptr;
  Blis(int threads) {
    void* h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) return;
    sgemm = reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
    if (auto set = reinterpret_cast<void (*)(long)>(dlsym(h, "bli_thread_set_num_threads"))) set(threads);
  }
};

double blis_flops_per_s(const Blis& blis, const GemmShape& s, double seconds) {
  const auto a = s.trans_a ? torch::randn({s.k, s.m}) : torch::randn({s.m, s.k});
  const auto b = s.trans_b ? torch::randn({s.n, s.k}) : torch::randn({s.k, s.n});
  auto c = torch::empty({s.m, s.n});
  auto run = [&] {
    blis.sgemm(101 /*row major*/, s.trans_a ? 112 : 111, s.trans_b ? 112 : 111, static_cast<int>(s.m),
               static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a.data_ptr<float>(), static_cast<int>(a.stride(0)),
               b.data_ptr<float>(), static_cast<int>(b.stride(0)), 0.0f, c.data_ptr<float>(), static_cast<int>(s.n));
  };
  run();
  int reps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double secs = 0;
  do {
    run();
    ++reps;
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (secs < seconds);
  return 2.0 * static_cast<double>(s.m * s.n * s.k) * reps / secs;
}

// bf16 products (gemm_bf16: oneDNN's matmul, fp32 sums and result), 0 where unavailable.
double bf16_flops_per_s(const GemmShape& s, double seconds) {
  namespace k = nmt::model::kernels;
  if (!k::bf16_gemm_problem().empty()) return 0;
  const auto a = (s.trans_a ? torch::randn({s.k, s.m}) : torch::randn({s.m, s.k})).to(torch::kBFloat16);
  const auto b = (s.trans_b ? torch::randn({s.n, s.k}) : torch::randn({s.k, s.n})).to(torch::kBFloat16);
  auto c = torch::empty({s.m, s.n});
  k::gemm_bf16(a, s.trans_a, b, s.trans_b, c, false);
  int reps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double secs = 0;
  do {
    k::gemm_bf16(a, s.trans_a, b, s.trans_b, c, false);
    ++reps;
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (secs < seconds);
  return 2.0 * static_cast<double>(s.m * s.n * s.k) * reps / secs;
}

std::string shape_name(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + (s.trans_a ? " At" : "") +
         (s.trans_b ? " Bt" : "");
}

// One JSON line for a set of products: per product and in all (FLOP-weighted harmonic).
void report(const char* label, const std::vector<GemmShape>& shapes, const Blis& blis, double seconds) {
  std::string products;
  double flops = 0, t_mkl = 0, t_dnnl = 0, t_blis = 0, t_bf16 = 0;
  for (const GemmShape& s : shapes) {
    const double f = 2.0 * static_cast<double>(s.m * s.n * s.k);
    const double mkl = nmt::model::kernels::gemm_flops_per_s(GemmBackend::kMkl, {s}, seconds);
    const double dnnl = nmt::model::kernels::onednn_available()
                            ? nmt::model::kernels::gemm_flops_per_s(GemmBackend::kOneDnn, {s}, seconds) : 0;
    const double bl = blis.sgemm ? blis_flops_per_s(blis, s, seconds) : 0;
    const double b16 = bf16_flops_per_s(s, seconds);
    flops += f, t_mkl += f / mkl, t_dnnl += dnnl > 0 ? f / dnnl : 0, t_blis += bl > 0 ? f / bl : 0;
    t_bf16 += b16 > 0 ? f / b16 : 0;
    char line[240];
    std::snprintf(line, sizeof(line),
                  "%s{\"shape\": \"%s\", \"mkl\": %.1f, \"onednn\": %.1f, \"blis\": %.1f, \"onednn_bf16\": %.1f}",
                  products.empty() ? "" : ", ", shape_name(s).c_str(), mkl / 1e9, dnnl / 1e9, bl / 1e9, b16 / 1e9);
    products += line;
  }
  std::printf("{\"shapes\": \"%s\", \"threads\": %d, \"gflops\": {\"mkl\": %.1f, \"onednn\": %.1f, \"blis\": %.1f, "
              "\"onednn_bf16\": %.1f}, \"onednn_over_mkl\": %.3f, \"bf16_over_onednn\": %.3f, \"products\": [%s]}\n",
              label, at::get_num_threads(), flops / t_mkl / 1e9, t_dnnl > 0 ? flops / t_dnnl / 1e9 : 0.0,
              t_blis > 0 ? flops / t_blis / 1e9 : 0.0, t_bf16 > 0 ? flops / t_bf16 / 1e9 : 0.0,
              t_dnnl > 0 ? t_mkl / t_dnnl : 0.0, t_bf16 > 0 && t_dnnl > 0 ? t_dnnl / t_bf16 : 0.0, products.c_str());
  std::fflush(stdout);
}

// One JSON line: each weight shape's forward through `backend` as stored (B transposed) and on a
// transposed copy (gemm_plan.h), made per call as in training or once as in decoding, and the
// shapes that would go on the copy.
void report_transposed_forward(const char* label, int64_t rows, int64_t d, int64_t f, double seconds,
                               nmt::model::kernels::TransposedCopy copy, nmt::model::kernels::GemmBackend backend) {
  namespace k = nmt::model::kernels;
  const auto shapes = k::transformer_weight_shapes(d, f, 8000);
  const auto timings =
      k::time_forward_both_ways(shapes, rows, seconds * static_cast<double>(shapes.size()), copy, backend);
  const bool once = copy == k::TransposedCopy::kOnce;
  std::string items;
  for (const k::ForwardTiming& t : timings) {
    const double flops = 2.0 * static_cast<double>(rows * t.shape.out * t.shape.in);
    char line[160];
    std::snprintf(line, sizeof(line), "%s{\"weight\": \"%s\", \"as_stored\": %.1f, \"%s\": %.1f}",
                  items.empty() ? "" : ", ", k::weight_shapes_text({t.shape}).c_str(), flops / t.as_stored_s / 1e9,
                  once ? "transposed_kept" : "transposed_copy", flops / t.transposed_s / 1e9);
    items += line;
  }
  std::printf("{\"shapes\": \"%s\", \"rows\": %ld, \"%s_forward_gflops\": [%s], \"%s\": \"%s\"}\n", label,
              static_cast<long>(rows), k::gemm_backend_name(backend), items.c_str(),
              once ? "inference_transposed" : "transposed_forward",
              k::weight_shapes_text(k::faster_transposed(timings)).c_str());
  std::fflush(stdout);
}

// One JSON line: each weight's bf16 forward at a decoding step's `rows` (gemm_bf16, as the
// decoder multiplies: bf16(x) times a kept bf16 copy of W) as stored (B transposed) and on a
// kept transposed bf16 copy, beside oneDNN fp32's on its kept transposed copy (fp32 decoding's
// way on every kind measured). Where bf16 decoding's products stand against fp32's per weight.
void report_bf16_decoding_forward(const char* label, int64_t rows, int64_t d, int64_t f, double seconds) {
  namespace k = nmt::model::kernels;
  if (!k::bf16_gemm_problem().empty() || !k::onednn_available()) return;
  const auto shapes = k::transformer_weight_shapes(d, f, 8000);
  const auto fp32 = k::time_forward_both_ways(shapes, rows, seconds * static_cast<double>(shapes.size()),
                                              k::TransposedCopy::kOnce, k::GemmBackend::kOneDnn);
  std::vector<torch::Tensor> x16, w16, wt16, y;
  for (const k::WeightShape& w : shapes) {
    x16.push_back(torch::randn({rows, w.in}).to(torch::kBFloat16));
    w16.push_back(torch::randn({w.out, w.in}).to(torch::kBFloat16));
    wt16.push_back(w16.back().t().contiguous());
    y.push_back(torch::empty({rows, w.out}));
  }
  // way 0: the bf16 weight as stored (B transposed), way 1: its kept transposed copy
  const auto bf16 =
      k::fastest_of_two_ways(shapes.size(), seconds * static_cast<double>(shapes.size()), [&](size_t i, int way) {
        const bool as_stored = way == 0;
        k::gemm_bf16(x16[i], false, as_stored ? w16[i] : wt16[i], as_stored, y[i], false);
      });
  std::string items;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const double flops = 2.0 * static_cast<double>(rows * shapes[i].out * shapes[i].in);
    char line[200];
    std::snprintf(line, sizeof(line),
                  "%s{\"weight\": \"%s\", \"bf16_as_stored\": %.1f, \"bf16_transposed_kept\": %.1f, "
                  "\"fp32_onednn_transposed_kept\": %.1f}",
                  items.empty() ? "" : ", ", k::weight_shapes_text({shapes[i]}).c_str(), flops / bf16[i][0] / 1e9,
                  flops / bf16[i][1] / 1e9, flops / fp32[i].transposed_s / 1e9);
    items += line;
  }
  std::printf("{\"shapes\": \"%s\", \"rows\": %ld, \"bf16_decoding_forward_gflops\": [%s]}\n", label,
              static_cast<long>(rows), items.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  using nmt::bench::positive_arg;
  return nmt::bench::run_bench_main("gemm", [&] {
    if (argc > 4) throw std::invalid_argument("usage: gemm [ROWS] [THREADS] [MILLISECONDS]");
    const int64_t rows = positive_arg(argc, argv, 1, "ROWS", 1536);
    const int threads = static_cast<int>(positive_arg(argc, argv, 2, "THREADS", 2));
    const double seconds = static_cast<double>(positive_arg(argc, argv, 3, "MILLISECONDS", 300)) / 1000.0;
    at::set_num_threads(threads);
    torch::manual_seed(0);
    if (!nmt::model::kernels::onednn_available())
      std::fprintf(stderr, "gemm: oneDNN not measured: %s\n", nmt::model::kernels::onednn_unavailable_reason().c_str());
    const Blis blis(threads);
    if (!blis.sgemm) std::fprintf(stderr, "gemm: BLIS not measured: libblis.so.4 not found (Debian libblis4)\n");
    if (const std::string why = nmt::model::kernels::bf16_gemm_problem(); !why.empty())
      std::fprintf(stderr, "gemm: bf16 not measured: %s\n", why.c_str());
    report("square 2048", {{2048, 2048, 2048, false, false}}, blis, seconds);
    report("recipe 256/1024/8000", nmt::model::kernels::transformer_gemm_shapes(rows, 256, 1024, 8000), blis, seconds);
    report("tiny 128/256/8000", nmt::model::kernels::transformer_gemm_shapes(rows, 128, 256, 8000), blis, seconds);
    namespace k = nmt::model::kernels;
    if (k::onednn_available()) {  // training's plan: oneDNN, the copy made per call
      report_transposed_forward("recipe 256/1024/8000", rows, 256, 1024, seconds, k::TransposedCopy::kEachCall,
                                k::GemmBackend::kOneDnn);
      report_transposed_forward("tiny 128/256/8000", rows, 128, 256, seconds, k::TransposedCopy::kEachCall,
                                k::GemmBackend::kOneDnn);
    }
    // decoding's (runtime/decoding_gemm_choice.h): a step's 256 rows, the copy kept, each library
    for (const k::GemmBackend backend : {k::GemmBackend::kMkl, k::GemmBackend::kOneDnn})
      if (backend == k::GemmBackend::kMkl || k::onednn_available())
        report_transposed_forward("recipe decoding step", 256, 256, 1024, seconds, k::TransposedCopy::kOnce, backend);
    for (const int64_t step_rows : {256, 32}) {  // a full batch's beams; a batch's last few sentences
      report_bf16_decoding_forward("recipe decoding step", step_rows, 256, 1024, seconds);
      report_bf16_decoding_forward("tiny decoding step", step_rows, 128, 256, seconds);
    }
    return 0;
  });
}
