#pragma once
// Sums gradients over ranks in buckets of at most dist.bucket_mb, in reverse parameter
// order (the order backward produces them). Buckets are fixed at construction from the
// parameter list alone, so every rank reduces the same buckets in the same order.
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "dist/communicator.h"
#include "dist/dist_config.h"

namespace nmt::dist {

// The dtype that dist.grad_dtype names.
inline torch::ScalarType wire_dtype(GradDtype d) {
  switch (d) {
    case GradDtype::kBf16: return torch::kBFloat16;
    case GradDtype::kFp16: return torch::kHalf;
    case GradDtype::kFp32: break;
  }
  return torch::kFloat32;
}

class GradReducer {
 public:
  // `params` in model order. Their .grad need not exist before a backward, but must by finish():
  // a bucket that starts during backward holds only gradients backward produced, while
  // finish() reads every parameter's .grad (a parameter no backward reached needs zeros: the
  // trainer's define_missing_gradients gives them before calling finish()).
  // `overlap` false: no bucket starts before finish() (dist.overlap, to measure what the
  // overlap with backward hides).
  // `rank_order`: buckets are summed with all_reduce_sum_rank_order (bitwise equal to one
  // rank accumulating every micro-batch).
  // `wire`: the dtype buckets are summed in (kFloat32, or kBFloat16/kHalf to halve the
  // traffic on slow links; the sums are cast back into the gradients).
  GradReducer(std::vector<torch::Tensor> params, Communicator& comm, double bucket_mb, bool overlap = true,
              bool rank_order = false, torch::ScalarType wire = torch::kFloat32);
  ~GradReducer();

  // Parameter indices of each bucket, in reduction order.
  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }

  // Call before the backward of an update's final micro-batch: from then on each bucket's
  // all-reduce starts as soon as all of its gradients are ready (autograd hooks).
  void arm();
  // After that backward: starts any bucket not yet started, waits for all, and copies the
  // sums back into the gradients.
  void finish();

  // For tests: the number of buckets whose reduction had started when backward returned
  // (read in finish() before the remaining ones start).
  int64_t started_during_backward() const { return started_during_backward_; }

 private:
  void on_grad_ready(size_t param);
  void launch(size_t bucket);

  std::vector<torch::Tensor> params_;
  Communicator& comm_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<size_t> bucket_of_;          // param index -> bucket
  std::vector<torch::Tensor> flat_;        // one contiguous buffer per bucket
  std::vector<int64_t> pending_;           // grads not yet ready, per bucket
  std::vector<std::unique_ptr<Work>> work_;
  std::vector<bool> ready_;
  size_t next_launch_ = 0;                 // buckets start in index order
  bool overlap_ = true;
  bool rank_order_ = false;
  bool armed_ = false;
  int64_t started_during_backward_ = 0;
  std::vector<std::pair<torch::Tensor, unsigned>> hooks_;
};

}  // namespace nmt::dist
