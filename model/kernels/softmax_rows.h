#pragma once
// One softmax row's statistics in one read, shared by the fused losses (fused_cross_entropy,
// fused_rdrop_loss): compiled once per ISA (NMT_CPU_CLONES) in softmax_rows.cpp.
#include <cstdint>

namespace nmt::model::kernels {

struct RowStats {
  float max, sum_exp, sum_shifted;  // max_j z_j, sum_j exp(z_j - max), sum_j (z_j - max)
};

RowStats row_stats(const float* z, int64_t v);

}  // namespace nmt::model::kernels
