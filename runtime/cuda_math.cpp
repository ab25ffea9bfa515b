#include "runtime/cuda_math.h"

#include <ATen/Context.h>

namespace nmt::runtime {

void configure_cuda_math(const config::TrainConfig& cfg) {
  auto& ctx = at::globalContext();
  // The allow_tf32 setters keep LibTorch's old and new TF32 flags in step; setting only the
  // new per-op precision makes the old getter, which library code still calls, throw
  // ("mix of the legacy and new APIs").
  ctx.setAllowTF32CuBLAS(cfg.tf32);
  ctx.setAllowTF32CuDNN(cfg.tf32);
  ctx.setSDPUseCuDNN(cfg.cudnn_sdpa);
}

}  // namespace nmt::runtime
