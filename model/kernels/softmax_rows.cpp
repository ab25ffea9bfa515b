#include "model/kernels/softmax_rows.h"

#include <cmath>

#include "model/kernels/cpu_clones.h"
#include "model/kernels/fast_exp.h"

namespace nmt::model::kernels {

NMT_CPU_CLONES RowStats row_stats(const float* z, int64_t v) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < v; ++j) m = z[j] > m ? z[j] : m;
  float s = 0.0f, t = 0.0f;
#pragma omp simd reduction(+ : s, t)
  for (int64_t j = 0; j < v; ++j) {
    s += exp_nonpositive(z[j] - m);
    t += z[j] - m;  // shifted: no cancellation against lse when logits are large
  }
  return {m, s, t};
}

}  // namespace nmt::model::kernels
