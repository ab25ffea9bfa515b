#include "model/kernels/fused_rdrop_loss.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <cmath>
#include <cstdint>

#include "model/kernels/cpu_clones.h"
#include "model/kernels/fast_exp.h"
#include "model/kernels/softmax_rows.h"

namespace nmt::model::kernels {

namespace {

struct PairDivergences {
  float p_from_q, q_from_p;  // KL(P || Q) = sum_j P_j (a_j - b_j), KL(Q || P) = sum_j Q_j (b_j - a_j)
};

NMT_CPU_CLONES PairDivergences pair_divergences(const float* z, const float* w, int64_t v, float lse_p,
                                                float lse_q) {
  float pq = 0.0f, qp = 0.0f;
#pragma omp simd reduction(+ : pq, qp)
  for (int64_t j = 0; j < v; ++j) {
    const float a = z[j] - lse_p, b = w[j] - lse_q;
    pq += exp_nonpositive(a) * (a - b);
    qp += exp_nonpositive(b) * (b - a);
  }
  return {pq, qp};
}

// What one pair's backward needs besides its two rows.
struct PairGradient {
  float lse_p, lse_q;          // the rows' log-sum-exp
  float g_p, g_q;              // d total / d loss of each row
  float g_div;                 // d total / d divergence of the pair, halved (the divergence's 1/2)
  float kl_pq, kl_qp;          // the forward's divergences
  float smooth;                // eps / V
};

// Per j, with p = P_j, q = Q_j, d = a_j - b_j (derivatives of the forward's formulas):
//   d loss_P / d z_j = p - eps / V   (minus 1 - eps at the target, subtracted after)
//   d div / d z_j    = (p (d - KL(P||Q)) + p - q) / 2,  and symmetrically for w.
// Each element's two gradients depend only on z_j and w_j: both rows are overwritten in place.
NMT_CPU_CLONES void pair_gradient(float* z, float* w, int64_t v, const PairGradient& s) {
#pragma omp simd
  for (int64_t j = 0; j < v; ++j) {
    const float a = z[j] - s.lse_p, b = w[j] - s.lse_q;
    const float p = exp_nonpositive(a), q = exp_nonpositive(b), d = a - b;
    z[j] = s.g_p * (p - s.smooth) + s.g_div * (p * (d - s.kl_pq) + p - q);
    w[j] = s.g_q * (q - s.smooth) + s.g_div * (q * (-d - s.kl_qp) + q - p);
  }
}

void check_rdrop_inputs(const torch::Tensor& logits, const torch::Tensor& target) {
  TORCH_CHECK(logits.dim() == 2 && logits.scalar_type() == torch::kFloat32 && logits.is_contiguous() &&
                  logits.device().is_cpu() && logits.size(0) % 2 == 0,
              "R-Drop loss needs contiguous [2n, V] float32 CPU logits, got ", logits.sizes(), " ",
              logits.scalar_type(), " on ", logits.device());
  TORCH_CHECK(!(logits.is_leaf() && logits.requires_grad()),
              "R-Drop loss overwrites its logits in the backward: pass a computed tensor, not a leaf");
  TORCH_CHECK(target.dim() == 1 && target.size(0) == logits.size(0) && target.scalar_type() == torch::kInt64,
              "R-Drop loss needs [2n] int64 targets for ", logits.size(0), " rows, got ", target.sizes(), " ",
              target.scalar_type());
  const int64_t n = logits.size(0) / 2;
  if (n == 0) return;
  TORCH_CHECK(target.min().item<int64_t>() >= 0 && target.max().item<int64_t>() < logits.size(1),
              "R-Drop loss: a target id is outside the vocabulary of ", logits.size(1));
  TORCH_CHECK(target.slice(0, 0, n).equal(target.slice(0, n)),
              "R-Drop loss: rows i and n + i must predict the same target (the batch's two copies)");
}

class FusedRdropCrossEntropy : public torch::autograd::Function<FusedRdropCrossEntropy> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                                                const torch::Tensor& target, double epsilon) {
    RECORD_FUNCTION("nmt::FusedRdropCrossEntropy", std::vector<c10::IValue>());
    check_rdrop_inputs(logits, target);
    const int64_t rows = logits.size(0), n = rows / 2, v = logits.size(1);
    const torch::Tensor y = target.contiguous();
    auto loss = torch::empty({rows}, logits.options()), nll = torch::empty({rows}, logits.options());
    auto lse = torch::empty({rows}, logits.options()), divergence = torch::empty({n}, logits.options());
    auto kl = torch::empty({2, n}, logits.options());  // KL(P||Q), KL(Q||P) per pair, for the backward
    const float* z = logits.const_data_ptr<float>();
    const int64_t* yp = y.const_data_ptr<int64_t>();
    float *lp = loss.data_ptr<float>(), *np = nll.data_ptr<float>(), *sp = lse.data_ptr<float>();
    float *dp = divergence.data_ptr<float>(), *kp = kl.data_ptr<float>();
    const float eps = static_cast<float>(epsilon), inv_v = 1.0f / static_cast<float>(v);
    at::parallel_for(0, n, 4, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        for (const int64_t r : {i, n + i}) {
          const float* row = z + r * v;
          const RowStats st = row_stats(row, v);
          const float log_sum = std::log(st.sum_exp);  // lse - max: no rounding of large logits
          np[r] = log_sum - (row[yp[r]] - st.max);
          lp[r] = (1.0f - eps) * np[r] + eps * (log_sum - st.sum_shifted * inv_v);
          sp[r] = st.max + log_sum;
        }
        const PairDivergences d = pair_divergences(z + i * v, z + (n + i) * v, v, sp[i], sp[n + i]);
        kp[i] = d.p_from_q;
        kp[n + i] = d.q_from_p;
        dp[i] = 0.5f * (d.p_from_q + d.q_from_p);
      }
    });
    ctx->save_for_backward({logits, y, lse, kl});
    ctx->saved_data["epsilon"] = epsilon;
    ctx->mark_non_differentiable({nll});
    return {loss, nll, divergence};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(!ctx->saved_data.count("consumed"),
                "R-Drop loss backward ran twice: its logits were overwritten by the first");
    ctx->saved_data["consumed"] = true;
    auto saved = ctx->get_saved_variables();
    torch::Tensor logits = saved[0];  // overwritten below by its own gradient
    const torch::Tensor &y = saved[1], &lse = saved[2], &kl = saved[3];
    const int64_t rows = logits.size(0), n = rows / 2, v = logits.size(1);
    auto gradient_or_zeros = [&](const torch::Tensor& g, int64_t size) {
      return g.defined() ? g.to(torch::kFloat32).contiguous() : torch::zeros({size}, logits.options());
    };
    const torch::Tensor g_loss = gradient_or_zeros(grads[0], rows), g_div = gradient_or_zeros(grads[2], n);
    const float eps = static_cast<float>(ctx->saved_data["epsilon"].toDouble());
    float* z = logits.data_ptr<float>();
    const float *gl = g_loss.const_data_ptr<float>(), *gd = g_div.const_data_ptr<float>();
    const float *sp = lse.const_data_ptr<float>(), *kp = kl.const_data_ptr<float>();
    const int64_t* yp = y.const_data_ptr<int64_t>();
    at::parallel_for(0, n, 4, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const PairGradient s{sp[i], sp[n + i], gl[i], gl[n + i], 0.5f * gd[i], kp[i], kp[n + i],
                             eps / static_cast<float>(v)};
        pair_gradient(z + i * v, z + (n + i) * v, v, s);
        z[i * v + yp[i]] -= (1.0f - eps) * gl[i];
        z[(n + i) * v + yp[n + i]] -= (1.0f - eps) * gl[n + i];
      }
    });
    torch::autograd::impl::bump_version(logits);  // as in fused_cross_entropy.cpp
    return {logits, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

RdropRowLosses fused_rdrop_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, double epsilon) {
  auto out = FusedRdropCrossEntropy::apply(logits, target, epsilon);
  return {out[0], out[1], out[2]};
}

}  // namespace nmt::model::kernels
