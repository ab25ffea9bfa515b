#pragma once
// Operands for timing a list of products at start (the GEMM library, bf16 against fp32): each
// product's A, B and C are views of one buffer per operand, as large as that operand's largest
// use, so a timing holds the largest product's operands rather than every product's at once.
//
// Why: the timings alternate all the products in rounds, so they held all operands together.
// At 1,536 rows and an 8k vocabulary the output layer's three products each hold a 49 MB
// matrix (its logits, or their gradient as an input twice), and the bf16 timing a 24.5 MB bf16
// copy of two of them beside: on a 2-core AMD EPYC Zen 4 a tiny-shape (128/256) bf16 run
// started 69 MB above fp32's and trained with a peak RSS 13% above it (the table before
// bench/README.md became the current state: `git show a23d15c^:bench/README.md`),
// with the heap never trimmed (runtime/malloc_tuning.h).
#include <torch/torch.h>

#include <vector>

#include "model/kernels/gemm.h"

namespace nmt::model::kernels {

// Product i's operands, views made once (not inside the timed calls): a [m, k] ([k, m] where
// trans_a), b [k, n] ([n, k] where trans_b), c [m, n] (written by the products, read by none), and
// where asked, a16 and b16: the same values rounded to bf16.
struct ProductOperands {
  torch::Tensor a, b, c, a16, b16;
};

class TimingOperands {
 public:
  // Random normal values from a generator of its own (training's seeded stream stays).
  TimingOperands(const std::vector<GemmShape>& shapes, bool with_bf16);
  const ProductOperands& operator[](size_t i) const { return products_.at(i); }

 private:
  torch::Tensor a_, b_, c_, a16_, b16_;  // flat: each product's operands are views of these
  std::vector<ProductOperands> products_;
};

}  // namespace nmt::model::kernels
