#include "model/kernels/fused_cross_entropy.h"

#include <ATen/record_function.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "model/kernels/cpu_clones.h"
#include "model/kernels/fast_exp.h"
#include "model/kernels/softmax_rows.h"

namespace nmt::model::kernels {

namespace {

// d_j = g (softmax_j - eps / V), written over z; the target's (1 - eps) g is subtracted after.
NMT_CPU_CLONES void row_gradient(float* z, int64_t v, float lse, float g, float smooth) {
  const float g_smooth = g * smooth;
#pragma omp simd
  for (int64_t j = 0; j < v; ++j) z[j] = g * exp_nonpositive(z[j] - lse) - g_smooth;
}

void check_inputs(const torch::Tensor& logits, const torch::Tensor& target) {
  TORCH_CHECK(logits.dim() == 2 && logits.scalar_type() == torch::kFloat32 && logits.is_contiguous() &&
                  logits.device().is_cpu(),
              "fused cross-entropy needs contiguous [n, V] float32 CPU logits, got ", logits.sizes(), " ",
              logits.scalar_type(), " on ", logits.device());
  TORCH_CHECK(target.dim() == 1 && target.size(0) == logits.size(0) && target.scalar_type() == torch::kInt64,
              "fused cross-entropy needs [n] int64 targets for ", logits.size(0), " rows, got ", target.sizes(), " ",
              target.scalar_type());
}

class FusedCrossEntropy : public torch::autograd::Function<FusedCrossEntropy> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                                                const torch::Tensor& target, double epsilon) {
    RECORD_FUNCTION("nmt::FusedCrossEntropy", std::vector<c10::IValue>());  // named in profiles (train --profile)
    check_inputs(logits, target);
    TORCH_CHECK(!(logits.is_leaf() && logits.requires_grad()),
                "fused cross-entropy overwrites its logits in the backward: pass a computed tensor, not a leaf");
    const int64_t n = logits.size(0), v = logits.size(1);
    const torch::Tensor y = target.contiguous();
    if (n > 0)
      TORCH_CHECK(y.min().item<int64_t>() >= 0 && y.max().item<int64_t>() < v,
                  "fused cross-entropy: a target id is outside the vocabulary of ", v);
    auto loss = torch::empty({n}, logits.options()), nll = torch::empty({n}, logits.options());
    auto lse = torch::empty({n}, logits.options());
    const float* z = logits.const_data_ptr<float>();
    const int64_t* yp = y.const_data_ptr<int64_t>();
    float *lp = loss.data_ptr<float>(), *np = nll.data_ptr<float>(), *sp = lse.data_ptr<float>();
    const float eps = static_cast<float>(epsilon), inv_v = 1.0f / static_cast<float>(v);
    at::parallel_for(0, n, 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float* row = z + i * v;
        const RowStats st = row_stats(row, v);
        const float log_sum = std::log(st.sum_exp);  // lse - max
        np[i] = log_sum - (row[yp[i]] - st.max);
        lp[i] = (1.0f - eps) * np[i] + eps * (log_sum - st.sum_shifted * inv_v);
        sp[i] = st.max + log_sum;
      }
    });
    ctx->save_for_backward({logits, y, lse});
    ctx->saved_data["epsilon"] = epsilon;
    ctx->mark_non_differentiable({nll});
    return {loss, nll};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(!ctx->saved_data.count("consumed"),
                "fused cross-entropy backward ran twice: its logits were overwritten by the first");
    ctx->saved_data["consumed"] = true;
    auto saved = ctx->get_saved_variables();
    torch::Tensor logits = saved[0];  // overwritten below by its own gradient
    const torch::Tensor &y = saved[1], &lse = saved[2];
    const torch::Tensor g = grads[0].defined() ? grads[0].to(torch::kFloat32).contiguous()
                                               : torch::zeros({logits.size(0)}, logits.options());
    const int64_t n = logits.size(0), v = logits.size(1);
    const float eps = static_cast<float>(ctx->saved_data["epsilon"].toDouble());
    float* z = logits.data_ptr<float>();
    const float *gp = g.const_data_ptr<float>(), *sp = lse.const_data_ptr<float>();
    const int64_t* yp = y.const_data_ptr<int64_t>();
    at::parallel_for(0, n, 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        row_gradient(z + i * v, v, sp[i], gp[i], eps / static_cast<float>(v));
        z[i * v + yp[i]] -= (1.0f - eps) * gp[i];
      }
    });
    // Written through a raw pointer: bump the version so that any other saved reference to
    // these logits fails autograd's check instead of silently reading the gradient.
    torch::autograd::impl::bump_version(logits);
    return {logits, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

RowLosses fused_label_smoothed_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target,
                                             double epsilon) {
  auto out = FusedCrossEntropy::apply(logits, target, epsilon);
  return {out[0], out[1]};
}

}  // namespace nmt::model::kernels
