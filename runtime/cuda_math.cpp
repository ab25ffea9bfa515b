#include "runtime/cuda_math.h"

#include <ATen/Context.h>

#include <cstdlib>

namespace nmt::runtime {

void configure_cuda_math(const config::Config& cfg, const torch::Device& device) {
  auto& ctx = at::globalContext();
  // The allow_tf32 setters keep LibTorch's old and new TF32 flags in step; setting only the
  // new per-op precision makes the old getter, which library code still calls, throw
  // ("mix of the legacy and new APIs").
  ctx.setAllowTF32CuBLAS(cfg.train.tf32);
  ctx.setAllowTF32CuDNN(cfg.train.tf32);
  const bool deterministic = cfg.debug.deterministic && device.is_cuda();
  ctx.setSDPUseCuDNN(cfg.train.cudnn_sdpa && !deterministic);
  if (!deterministic) return;
  // cuBLAS reads this when its first handle is made, which is after this call; an explicit
  // setting of the user's wins (both values NVIDIA documents are deterministic).
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  ctx.setDeterministicAlgorithms(true, /*warn_only=*/false);
  ctx.setDeterministicCuDNN(true);
  ctx.setBenchmarkCuDNN(false);
  ctx.setSDPUseFlash(false);
  ctx.setSDPUseMemEfficient(false);
}

}  // namespace nmt::runtime
