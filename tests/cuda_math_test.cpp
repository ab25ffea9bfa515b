// train.tf32 and train.cudnn_sdpa reach LibTorch's global context (runtime/cuda_math.h);
// settings only, so they are checked without a GPU.
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include "runtime/cuda_math.h"

namespace nmt::runtime {
namespace {

TEST(CudaMath, KeysSetTheContextAndTheDefaultsKeepIeeeAndCudnnSdpaOff) {
  auto& ctx = at::globalContext();
  config::TrainConfig cfg;
  cfg.tf32 = true;
  cfg.cudnn_sdpa = true;
  configure_cuda_math(cfg);
  EXPECT_EQ(ctx.float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL), at::Float32Precision::TF32);
  EXPECT_TRUE(ctx.allowTF32CuBLAS());  // the old getter agrees (it throws where the two disagree)
  EXPECT_TRUE(ctx.allowTF32CuDNN());
  EXPECT_TRUE(ctx.userEnabledCuDNNSDP());
  configure_cuda_math(config::TrainConfig{});  // the defaults
  EXPECT_EQ(ctx.float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL), at::Float32Precision::IEEE);
  EXPECT_FALSE(ctx.allowTF32CuBLAS());
  EXPECT_FALSE(ctx.allowTF32CuDNN());
  EXPECT_FALSE(ctx.userEnabledCuDNNSDP());
}

}  // namespace
}  // namespace nmt::runtime
