#include "checkpoint/memory_estimate.h"

#include <unistd.h>

#include <cstdio>

#include "config/config_error.h"
#ifdef NMTRAIN_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace nmt::checkpoint {

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

double available_memory(const torch::Device& device) {
#ifdef NMTRAIN_WITH_CUDA
  if (device.is_cuda()) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device.index()) == cudaSuccess) return static_cast<double>(prop.totalGlobalMem);
  }
#endif
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

void check_fits(const model::ModelConfig& model, const config::Config& cfg, const torch::Device& device, bool training) {
  const int64_t tokens = training ? cfg.data.max_tokens : cfg.eval.max_tokens;
  const MemoryEstimate e = estimate_memory(model, tokens, training);
  const double have = available_memory(device);
  if (e.total() <= have) return;
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
      std::to_string(tokens) + " need at least " + gb(e.total()) + " (" + gb(e.parameters) +
      (training ? " parameters, gradients and Adam state, " : " parameters, ") + gb(e.activations) +
      " activations) but " + device.str() + " has " + gb(have) + " of memory");
}

}  // namespace nmt::checkpoint
