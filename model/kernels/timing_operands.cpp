#include "model/kernels/timing_operands.h"

#include <algorithm>

namespace nmt::model::kernels {
namespace {

// An operand of `rows` x `cols` as stored: the first rows * cols values of a flat buffer,
// [rows, cols], or [cols, rows] where transposed. Undefined where the buffer is.
torch::Tensor matrix(const torch::Tensor& flat, int64_t rows, int64_t cols, bool transposed) {
  if (!flat.defined()) return {};
  const auto values = flat.narrow(0, 0, rows * cols);
  return transposed ? values.view({cols, rows}) : values.view({rows, cols});
}

}  // namespace

TimingOperands::TimingOperands(const std::vector<GemmShape>& shapes, bool with_bf16) {
  int64_t a_size = 0, b_size = 0, c_size = 0;
  for (const GemmShape& s : shapes) {
    a_size = std::max(a_size, s.m * s.k);
    b_size = std::max(b_size, s.k * s.n);
    c_size = std::max(c_size, s.m * s.n);
  }
  auto gen = at::detail::createCPUGenerator(1);
  a_ = at::randn({a_size}, gen);
  b_ = at::randn({b_size}, gen);
  c_ = torch::empty({c_size});
  if (with_bf16) {
    a16_ = a_.to(torch::kBFloat16);
    b16_ = b_.to(torch::kBFloat16);
  }
  for (const GemmShape& s : shapes)
    products_.push_back({matrix(a_, s.m, s.k, s.trans_a), matrix(b_, s.k, s.n, s.trans_b), matrix(c_, s.m, s.n, false),
                         matrix(a16_, s.m, s.k, s.trans_a), matrix(b16_, s.k, s.n, s.trans_b)});
}

}  // namespace nmt::model::kernels
