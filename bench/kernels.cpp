// kernels [ROWS] [VOCAB] [THREADS]: times our fused CPU kernels against the LibTorch op
// chains they replace, side by side in one process, and prints one JSON line of
// milliseconds (median of 9 after 2 warm-ups) and speed-ups net of the work both share:
// label-smoothed cross-entropy over [ROWS, VOCAB] logits, and residual dropout (p 0.1)
// on a [2 ROWS, 256] activation.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "model/kernels/fused_cross_entropy.h"
#include "model/kernels/fused_dropout.h"
#include "optim/loss.h"
#include "runtime/malloc_tuning.h"

namespace {

double median_ms(const std::function<void()>& fn) {
  std::vector<double> ms;
  for (int i = 0; i < 11; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= 2) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using nmt::bench::positive_arg;
  nmt::runtime::keep_freed_memory_mapped();  // as in train: no page faults in the timings
  return nmt::bench::run_bench_main("kernels", [&] {
    if (argc > 4) throw std::invalid_argument("usage: kernels [ROWS] [VOCAB] [THREADS]");
    const int64_t n = positive_arg(argc, argv, 1, "ROWS", 1800), v = positive_arg(argc, argv, 2, "VOCAB", 8000);
    at::set_num_threads(static_cast<int>(positive_arg(argc, argv, 3, "THREADS", 2)));
    torch::manual_seed(0);
    const auto logits = torch::randn({n, v}) * 3.0;
    const auto target = torch::randint(0, v, {n}, torch::kInt64);
    const double eps = 0.1;
    const double fused = median_ms([&] {
      auto z = logits.clone().requires_grad_(true);
      nmt::model::kernels::fused_label_smoothed_cross_entropy(z * 1.0, target, eps).loss.sum().backward();
    });
    const double chain = median_ms([&] {
      auto z = logits.clone().requires_grad_(true);
      nmt::optim::reference_label_smoothed_loss(z * 1.0, target, eps, n).loss.backward();
    });
    const double baseline = median_ms([&] {  // the clone and multiply both variants pay
      auto z = logits.clone().requires_grad_(true);
      (z * 1.0).sum().backward();
    });
    // Residual dropout on a [tokens, 256] activation, forward and backward.
    const auto x = torch::randn({n * 2, 256}), y = torch::randn({n * 2, 256});
    const double drop_fused = median_ms([&] {
      auto a = x.clone().requires_grad_(true), b = y.clone().requires_grad_(true);
      nmt::model::kernels::dropout_add(a, b, 0.1, true).sum().backward();
    });
    const double drop_libtorch = median_ms([&] {
      auto a = x.clone().requires_grad_(true), b = y.clone().requires_grad_(true);
      namespace F = torch::nn::functional;
      (a + F::dropout(b, F::DropoutFuncOptions().p(0.1).training(true))).sum().backward();
    });
    const double drop_base = median_ms([&] {
      auto a = x.clone().requires_grad_(true), b = y.clone().requires_grad_(true);
      (a + b).sum().backward();
    });
    std::printf("{\"rows\": %lld, \"vocab\": %lld, \"threads\": %d, \"cross_entropy_fwd_bwd_ms\": "
                "{\"fused\": %.2f, \"log_softmax_chain\": %.2f, \"common_overhead\": %.2f}, \"cross_entropy_speedup\": %.2f, "
                "\"dropout_add_fwd_bwd_ms\": {\"fused\": %.2f, \"libtorch_dropout_then_add\": %.2f, \"add_alone\": %.2f}, "
                "\"dropout_speedup\": %.2f}\n",
                static_cast<long long>(n), static_cast<long long>(v), at::get_num_threads(), fused, chain, baseline,
                (chain - baseline) / std::max(fused - baseline, 1e-3), drop_fused, drop_libtorch, drop_base,
                (drop_libtorch - drop_base) / std::max(drop_fused - drop_base, 1e-3));
    return 0;
  });
}
