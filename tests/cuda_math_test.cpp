// train.tf32, train.cudnn_sdpa and debug.deterministic reach LibTorch's global context
// (runtime/cuda_math.h); settings only, so they are checked without a GPU.
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/cuda_math.h"

namespace nmt::runtime {
namespace {

TEST(CudaMath, KeysSetTheContextAndTheDefaultsAllowTf32AndKeepCudnnSdpaOff) {
  auto& ctx = at::globalContext();
  config::Config cfg;
  cfg.train.tf32 = false;
  cfg.train.cudnn_sdpa = true;
  configure_cuda_math(cfg, torch::kCPU);
  EXPECT_EQ(ctx.float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL), at::Float32Precision::IEEE);
  EXPECT_FALSE(ctx.allowTF32CuBLAS());  // the old getter agrees (it throws where the two disagree)
  EXPECT_FALSE(ctx.allowTF32CuDNN());
  EXPECT_TRUE(ctx.userEnabledCuDNNSDP());
  configure_cuda_math(config::Config{}, torch::kCPU);  // the defaults
  EXPECT_EQ(ctx.float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL), at::Float32Precision::TF32);
  EXPECT_TRUE(ctx.allowTF32CuBLAS());
  EXPECT_TRUE(ctx.allowTF32CuDNN());
  EXPECT_FALSE(ctx.userEnabledCuDNNSDP());
  EXPECT_FALSE(ctx.deterministicAlgorithms());
}

TEST(CudaMath, DeterministicModeChoosesDeterministicKernelsAndCublasWorkspace) {
  auto& ctx = at::globalContext();
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
  config::Config cfg;
  cfg.train.cudnn_sdpa = true;  // refused under debug.deterministic: cuDNN attention is not
  cfg.debug.deterministic = true;
  configure_cuda_math(cfg, torch::kCPU);  // a CPU process: nothing to set
  EXPECT_FALSE(ctx.deterministicAlgorithms());
  EXPECT_EQ(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  configure_cuda_math(cfg, torch::Device(torch::kCUDA, 0));  // settings only: no GPU needed
  EXPECT_TRUE(ctx.deterministicAlgorithms());
  EXPECT_FALSE(ctx.deterministicAlgorithmsWarnOnly());
  EXPECT_TRUE(ctx.deterministicCuDNN());
  EXPECT_FALSE(ctx.benchmarkCuDNN());
  EXPECT_FALSE(ctx.userEnabledFlashSDP());
  EXPECT_FALSE(ctx.userEnabledMemEfficientSDP());
  EXPECT_FALSE(ctx.userEnabledCuDNNSDP());
  EXPECT_TRUE(ctx.userEnabledMathSDP());
  ASSERT_NE(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  EXPECT_EQ(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")), ":4096:8");
  // Put the process back as other tests in this binary expect it.
  ctx.setDeterministicAlgorithms(false, false);
  ctx.setDeterministicCuDNN(false);
  ctx.setSDPUseFlash(true);
  ctx.setSDPUseMemEfficient(true);
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
}

}  // namespace
}  // namespace nmt::runtime
