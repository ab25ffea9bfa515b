#pragma once
// Operands for timing a list of products at start (the GEMM library, bf16 against fp32): each
// product's A, B and C are views of one buffer per operand, as large as that operand's largest
// use, so a timing holds the largest product's operands rather than every product's at once.
//
// Why: the timings alternate all the products in rounds, so they held all operands together.
// At 1,536 rows and an 8k vocabulary the output layer's three products each hold a 49 MB
// matrix (its logits, or their gradient as an input twice), and the bf16 timing a 24.5 MB bf16
// copy of two of them beside: on a 2-core AMD EPYC Zen 4 a tiny-shape (128/256) bf16 run
// started 69 MB above fp32's and trained with a peak RSS 13% above it (bench/README.md),
// with the heap never trimmed (runtime/malloc_tuning.h).
#include <torch/torch.h>

#include <vector>

#include "model/kernels/gemm.h"

namespace nmt::model::kernels {

class TimingOperands {
 public:
  // Random normal values from a generator of its own (training's seeded stream stays); the bf16
  // copies, where `with_bf16`, are the same values rounded.
  TimingOperands(const std::vector<GemmShape>& shapes, bool with_bf16);

  torch::Tensor a(const GemmShape& s) const;  // [m, k], or [k, m] where trans_a
  torch::Tensor b(const GemmShape& s) const;  // [k, n], or [n, k] where trans_b
  torch::Tensor c(const GemmShape& s) const;  // [m, n]: written by the products, read by none
  torch::Tensor a16(const GemmShape& s) const;
  torch::Tensor b16(const GemmShape& s) const;

 private:
  torch::Tensor a_, b_, c_, a16_, b16_;  // flat
};

}  // namespace nmt::model::kernels
