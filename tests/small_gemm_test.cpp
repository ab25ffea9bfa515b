// The attention's micro-kernel (model/kernels/small_gemm) against LibTorch's mm, on the code of
// every ISA this CPU runs: strided rows, row counts on both sides of its 4-row blocks, column
// counts of one and several vector blocks, k from 1 up. The FMA ISAs (AVX2, AVX-512) must also
// agree bit for bit, which is what keeps a run's bits the same across those CPUs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/kernels/small_gemm.h"

namespace nmt::model::kernels {
namespace {

const SmallGemmIsa kAllIsas[] = {SmallGemmIsa::kAvx512, SmallGemmIsa::kAvx2, SmallGemmIsa::kBaseline};

struct Product {
  int64_t m, n, k;
};

// C = A B with A, B and C as views into wider rows (strides lda = k + 3, ldb = n + 16,
// ldc = n + 32), through `isa`'s code; returns C [m, n].
torch::Tensor multiply_on(SmallGemmIsa isa, const torch::Tensor& a_wide, const torch::Tensor& b_wide,
                          const Product& p) {
  auto c_wide = torch::full({p.m, p.n + 32}, 7.0f);  // overwritten where C lies
  small_gemm_on(isa, p.m, p.n, p.k, a_wide.const_data_ptr<float>(), a_wide.size(1), b_wide.const_data_ptr<float>(),
                b_wide.size(1), c_wide.data_ptr<float>(), c_wide.size(1));
  EXPECT_TRUE(c_wide.narrow(1, p.n, 32).eq(7.0f).all().item<bool>()) << "wrote past C's columns";
  return c_wide.narrow(1, 0, p.n);
}

TEST(SmallGemm, MatchesLibTorchOnEveryIsaThisCpuRuns) {
  const std::vector<Product> products = {{1, 16, 1},  {3, 16, 32}, {4, 32, 32},   {5, 48, 17},
                                         {19, 32, 64}, {23, 64, 23}, {37, 128, 37}, {70, 16, 70}};
  for (const SmallGemmIsa isa : kAllIsas) {
    if (!cpu_runs(isa)) continue;
    for (const Product& p : products) {
      torch::manual_seed(p.m * 1000 + p.n + p.k);
      const auto a_wide = torch::randn({p.m, p.k + 3}), b_wide = torch::randn({p.k, p.n + 16});
      const auto want = torch::mm(a_wide.narrow(1, 0, p.k).to(torch::kFloat64), b_wide.narrow(1, 0, p.n).to(torch::kFloat64));
      const auto got = multiply_on(isa, a_wide, b_wide, p).to(torch::kFloat64);
      // fp32 sums of k products of unit normals: error about k * 2^-24 * sqrt(k)-sized terms.
      const double bound = 4.0 * p.k * std::ldexp(1.0, -24) * (1.0 + want.abs().max().item<double>());
      EXPECT_LT((got - want).abs().max().item<double>(), bound)
          << small_gemm_isa_name(isa) << " m " << p.m << " n " << p.n << " k " << p.k;
    }
  }
}

TEST(SmallGemm, AvxTwoAndAvx512GiveTheSameBits) {
  if (!cpu_runs(SmallGemmIsa::kAvx2) || !cpu_runs(SmallGemmIsa::kAvx512))
    GTEST_SKIP() << "needs a CPU with both AVX2 and AVX-512 (the widest here: "
                 << small_gemm_isa_name(widest_small_gemm_isa()) << ")";
  for (const Product& p : {Product{23, 48, 32}, Product{9, 16, 61}, Product{4, 64, 7}}) {
    torch::manual_seed(3);
    const auto a_wide = torch::randn({p.m, p.k + 3}), b_wide = torch::randn({p.k, p.n + 16});
    EXPECT_TRUE(torch::equal(multiply_on(SmallGemmIsa::kAvx2, a_wide, b_wide, p),
                             multiply_on(SmallGemmIsa::kAvx512, a_wide, b_wide, p)))
        << "m " << p.m << " n " << p.n << " k " << p.k;
  }
}

// The flags the kernel reads, as /proc/cpuinfo lists them.
bool cpuinfo_has(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

TEST(SmallGemm, TheWidestIsaIsWhatCpuinfoListsAndAnotherIsRefused) {
  const SmallGemmIsa want = cpuinfo_has("avx512f")                         ? SmallGemmIsa::kAvx512
                            : cpuinfo_has("avx2") && cpuinfo_has("fma")    ? SmallGemmIsa::kAvx2
                                                                           : SmallGemmIsa::kBaseline;
  EXPECT_STREQ(small_gemm_isa_name(widest_small_gemm_isa()), small_gemm_isa_name(want));
  EXPECT_TRUE(cpu_runs(SmallGemmIsa::kBaseline));
  for (const SmallGemmIsa isa : kAllIsas) {
    if (cpu_runs(isa)) continue;
    float x = 0;
    EXPECT_THROW(small_gemm_on(isa, 1, 16, 1, &x, 1, &x, 16, &x, 16), std::invalid_argument);
  }
}

}  // namespace
}  // namespace nmt::model::kernels
