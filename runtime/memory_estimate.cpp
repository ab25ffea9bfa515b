#include "runtime/memory_estimate.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>

#include <cstdio>

#include "config/config_error.h"
#ifdef NMTRAIN_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace nmt::runtime {

MemoryEstimate estimate_memory(const model::ModelConfig& m, int64_t tokens, bool training) {
  const double d = static_cast<double>(m.d_model), f = static_cast<double>(m.ffn_dim),
               v = static_cast<double>(m.vocab_size), n = static_cast<double>(tokens);
  // Weight matrices only (biases and norms are lower order): tied embedding, per encoder
  // layer self-attention (4 d^2) and FFN (2 d f), per decoder layer two attentions.
  const double params = v * d + static_cast<double>(m.encoder_layers) * (4 * d * d + 2 * d * f) +
                        static_cast<double>(m.decoder_layers) * (8 * d * d + 2 * d * f);
  MemoryEstimate e;
  e.parameters = params * 4 * (training ? 4 : 1);  // fp32 weights (+ gradient, exp_avg, exp_avg_sq)
  // Activations kept for backward: per layer at least its FFN hidden (f) and a few d-wide
  // tensors per token; the logits (and their gradient) of the output projection.
  const double per_token = static_cast<double>(m.encoder_layers + m.decoder_layers) * (f + 6 * d);
  e.activations = n * per_token * 4 * (training ? 1 : 0.25) + n * v * 4 * (training ? 2 : 1);
  return e;
}

namespace {

// A number read from a one-line file such as /sys/fs/cgroup/memory.max ("max" = none).
std::optional<double> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return std::stod(word);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The process's memory cgroup: its limit and usage files, v2 ("0::/path" in
// /proc/self/cgroup: memory.max, memory.current) or v1 ("N:memory:/path":
// memory.limit_in_bytes, memory.usage_in_bytes). Empty names where there is none.
struct CgroupFiles {
  std::string dir, limit, usage;
};
CgroupFiles own_memory_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  CgroupFiles v1, v2;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) {
      const std::string dir = "/sys/fs/cgroup" + line.substr(3);
      v2 = {dir, dir + "/memory.max", dir + "/memory.current"};
    } else if (const auto at = line.find(":memory:"); at != std::string::npos) {
      const std::string dir = "/sys/fs/cgroup/memory" + line.substr(at + 8);
      v1 = {dir, dir + "/memory.limit_in_bytes", dir + "/memory.usage_in_bytes"};
    }
  }
  return v1.dir.empty() ? v2 : v1;  // a v1 memory controller, where mounted, is the one in force
}

// Current size of the address space, from /proc/self/statm (pages).
double address_space_in_use() {
  std::ifstream in("/proc/self/statm");
  double pages = 0;
  in >> pages;
  return pages * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

}  // namespace

AvailableMemory available_memory(const torch::Device& device) {
#ifdef NMTRAIN_WITH_CUDA
  if (device.is_cuda()) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device.index()) == cudaSuccess)
      return {static_cast<double>(prop.totalGlobalMem), "of memory"};
  }
#else
  (void)device;
#endif
  AvailableMemory best{static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE)),
                       "of memory"};
  if (rlimit lim{}; getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    const double left = std::max(0.0, static_cast<double>(lim.rlim_cur) - address_space_in_use());
    if (left < best.bytes) best = {left, "left under the address-space limit (ulimit -v)"};
  }
  if (const CgroupFiles cg = own_memory_cgroup(); !cg.dir.empty()) {
    const auto max = read_number(cg.limit), used = read_number(cg.usage);
    if (max && used && *max - *used < best.bytes)
      best = {std::max(0.0, *max - *used), "left under its cgroup's memory limit (" + cg.limit + ")"};
  }
  return best;
}

void check_fits(const model::ModelConfig& model, const config::Config& cfg, const torch::Device& device, bool training) {
  const int64_t tokens = training ? cfg.data.max_tokens : cfg.eval.max_tokens;
  // R-Drop runs each training micro-batch twice, in one batch of twice the tokens.
  const int64_t copies = training && cfg.optim.rdrop_alpha > 0 ? 2 : 1;
  const MemoryEstimate e = estimate_memory(model, copies * tokens, training);
  const AvailableMemory have = available_memory(device);
  if (e.total() <= have.bytes) return;
  auto gb = [](double bytes) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f GB", bytes / 1e9);
    return std::string(text);
  };
  throw config::ConfigError(
      "the model does not fit: model.d_model = " + std::to_string(model.d_model) + ", model.ffn_dim = " +
      std::to_string(model.ffn_dim) + ", model.encoder_layers = " + std::to_string(model.encoder_layers) +
      ", model.decoder_layers = " + std::to_string(model.decoder_layers) + ", vocabulary " +
      std::to_string(model.vocab_size) + " and " + (training ? "data.max_tokens = " : "eval.max_tokens = ") +
      std::to_string(tokens) + (copies == 2 ? " (twice: optim.rdrop_alpha > 0)" : "") + " need at least " + gb(e.total()) + " (" + gb(e.parameters) +
      (training ? " parameters, gradients and Adam state, " : " parameters, ") + gb(e.activations) +
      " activations) but " + device.str() + " has " + gb(have.bytes) + " " + have.limited_by);
}

}  // namespace nmt::runtime
