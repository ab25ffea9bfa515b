// `train --benchmark`: timed updates and the figures of bench/README.md.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "base/elapsed.h"
#include "model/kernels/bf16_gemm.h"
#include "model/kernels/gemm.h"
#include "model/kernels/linear.h"
#include "runtime/profiler.h"
#include "trainer/trainer.h"

namespace fs = std::filesystem;

namespace nmt::trainer {

namespace {
struct MatmulPeak {
  double flops_per_s = 0;
  std::string library;  // the GEMM that reached it: "mkl", "onednn", "onednn_bf16", or "cuda" (torch::mm)
};

// On a GPU: 4096^3 products in the precision the run computes in (fp32 may use TF32 under
// train.tf32), so that the MFU is against the peak the run could reach.
MatmulPeak cuda_matmul_peak(const torch::Device& device, config::Precision precision) {
  const int64_t n = 4096;
  const auto dtype = precision == config::Precision::kBf16   ? torch::kBFloat16
                     : precision == config::Precision::kFp16 ? torch::kHalf
                                                             : torch::kFloat32;
  auto a = torch::randn({n, n}, torch::TensorOptions().device(device).dtype(dtype)), b = torch::randn_like(a);
  for (int i = 0; i < 3; ++i) torch::mm(a, b);
  torch::cuda::synchronize();
  int reps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  do {
    for (int i = 0; i < 10; ++i) torch::mm(a, b);
    reps += 10;
    torch::cuda::synchronize();
  } while (base::seconds_since(t0) < 1.0);
  return {2.0 * n * n * n * reps / base::seconds_since(t0), "cuda"};
}

// The matrix-multiply FLOP/s MFU is measured against: a 2048^3 product with this process's
// intra-op threads, through the best GEMM library of the machine (MKL or oneDNN,
// model/kernels/gemm.h), so that a library the trainer does not use cannot flatter the MFU.
// 2 s per library, in alternating halves: 1 s of one library was too noisy on a shared VM.
// Under bf16 products (train.precision=bf16 on a CPU) the peak is bf16's (gemm_bf16).
MatmulPeak matmul_peak(const torch::Device& device, config::Precision precision) {
  if (device.is_cuda()) return cuda_matmul_peak(device, precision);
  const int64_t n = 2048;
  using model::kernels::GemmBackend;
  if (model::kernels::linear_precision() == model::kernels::LinearPrecision::kBf16) {
    auto a = torch::randn({n, n}).to(torch::kBFloat16), b = torch::randn({n, n}).to(torch::kBFloat16);
    auto c = torch::empty({n, n});
    model::kernels::gemm_bf16(a, false, b, false, c, false);  // untimed: the primitive is made
    int reps = 0;
    const auto t0 = std::chrono::steady_clock::now();
    do {
      model::kernels::gemm_bf16(a, false, b, false, c, false);
      ++reps;
    } while (base::seconds_since(t0) < 2.0);
    return {2.0 * n * n * n * reps / base::seconds_since(t0), "onednn_bf16"};
  }
  const std::vector<model::kernels::GemmShape> square{{n, n, n, false, false}};
  std::vector<GemmBackend> libraries{GemmBackend::kMkl};
  if (model::kernels::onednn_available()) libraries.push_back(GemmBackend::kOneDnn);
  std::vector<double> speed(libraries.size(), 0.0);
  for (int half = 0; half < 2; ++half)
    for (size_t i = 0; i < libraries.size(); ++i)
      speed[i] += model::kernels::gemm_flops_per_s(libraries[i], square, 1.0) / 2;
  const size_t best = static_cast<size_t>(std::max_element(speed.begin(), speed.end()) - speed.begin());
  return {speed[best], model::kernels::gemm_backend_name(libraries[best])};
}

double peak_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  double kb = 0;
  while (std::fgets(line, sizeof(line), f))
    if (std::sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}
}  // namespace

// What bench/pytorch_reference.py needs to run the same computation: the initial weights
// and the micro-batches (example indices) of every update, in order. Collective.
void Trainer::write_benchmark_reference(const std::string& out_dir, int64_t total_updates) {
  checkpoint::Checkpoint init = make_checkpoint();  // collective: every rank takes part
  if (!group_.is_main()) return;
  fs::create_directories(out_dir);
  checkpoint::save_checkpoint(init, (fs::path(out_dir) / "init.pt").string());
  data::BatchPlanner copy = *planner_;
  nlohmann::json plan = nlohmann::json::array();
  for (int64_t i = 0; i < total_updates; ++i) {  // every slot of each update, all ranks'
    const auto at = copy.state();
    plan.push_back(copy.update_slots(at.epoch, at.cursor));
    copy.next(0);
  }
  std::ofstream((fs::path(out_dir) / "plan.json").string()) << plan.dump() << "\n";
}

nlohmann::json Trainer::benchmark(int64_t warmup, int64_t updates, const std::string& out_dir,
                                  const std::string& profile_path) {
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model_->parameters()) comm_->broadcast(p, 0);
  }
  if (!out_dir.empty()) write_benchmark_reference(out_dir, warmup + updates);
  for (int64_t i = 0; i < warmup; ++i) train_step(planner_->next(group_.rank()));
  StepTimes times;
  double src_tokens = 0, tgt_tokens = 0, padded = 0, flops = 0;
  std::vector<double> losses;  // per timed update, per target token (compare with the reference)
  std::optional<runtime::ProfileRecording> recording;
  if (!profile_path.empty()) recording.emplace(device_);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < updates; ++i) {
    const StepResult r = train_step(planner_->next(group_.rank()));
    times += r.times;
    src_tokens += static_cast<double>(r.local_src_tokens);
    tgt_tokens += static_cast<double>(r.local_tgt_tokens);
    padded += static_cast<double>(r.local_padded);
    flops += r.local_flops;
    losses.push_back(r.loss / static_cast<double>(std::max<int64_t>(r.tokens, 1)));
  }
  if (device_.is_cuda()) torch::cuda::synchronize();
  const double secs = base::seconds_since(t0);
  if (recording)
    recording->save(group_.is_main() ? profile_path : profile_path + ".rank" + std::to_string(group_.rank()));
  // Sums over ranks; the slowest rank's clock sets the pace.
  src_tokens = comm_->all_reduce_sum(src_tokens);
  const double all_tgt = comm_->all_reduce_sum(tgt_tokens);
  padded = comm_->all_reduce_sum(padded);
  flops = comm_->all_reduce_sum(flops);
  const double wall = comm_->all_reduce_max(secs);
  const MatmulPeak mine = matmul_peak(device_, cfg_.train.precision);
  const double peak = comm_->all_reduce_sum(mine.flops_per_s);  // every rank's peak, measured apart
  auto share = [&](double t) { return t / times.total(); };
  return {{"ranks", group_.world_size()},
          {"threads", cfg_.train.threads},
          {"updates", updates},
          {"tgt_tokens_per_s", all_tgt / wall},
          {"src_tgt_tokens_per_s", (src_tokens + all_tgt) / wall},
          {"updates_per_s", static_cast<double>(updates) / wall},
          {"seconds", wall},
          {"breakdown", {{"data", share(times.data)}, {"forward", share(times.forward)},
                         {"backward", share(times.backward)}, {"reduce_wait", share(times.reduce)},
                         {"optimizer", share(times.optimizer)}}},
          {"padding_fraction", 1.0 - (src_tokens + all_tgt) / padded},
          {"peak_rss_bytes", comm_->all_reduce_max(peak_rss_bytes())},
          {"model_flops_per_update", flops / static_cast<double>(updates)},
          {"achieved_flops_per_s", flops / wall},
          {"matmul_peak_flops_per_s", peak},
          {"matmul_peak_library", mine.library},
          {"gemm", model::kernels::gemm_backend_name(gemm_.backend)},
          {"gemm_choice", gemm_text()},
          {"attention", model::kernels::attention_kernel_name(model::kernels::attention_kernel())},
          {"mfu", flops / wall / peak},
          {"parameters", model::parameter_count(*model_)},
          {"losses", losses}};
}

}  // namespace nmt::trainer
