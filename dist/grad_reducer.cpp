#include "dist/grad_reducer.h"

namespace nmt::dist {

GradReducer::GradReducer(std::vector<torch::Tensor> params, Communicator& comm, double bucket_mb, bool overlap,
                         bool rank_order, torch::ScalarType wire)
    : params_(std::move(params)), comm_(comm), overlap_(overlap), rank_order_(rank_order) {
  const int64_t cap = static_cast<int64_t>(bucket_mb * 1024 * 1024);
  bucket_of_.resize(params_.size());
  std::vector<size_t> cur;
  int64_t bytes = 0;
  // Reverse order: the last layers' gradients are ready first during backward.
  for (size_t k = params_.size(); k-- > 0;) {
    const int64_t b = params_[k].numel() * params_[k].element_size();
    if (!cur.empty() && bytes + b > cap) {
      buckets_.push_back(std::move(cur));
      cur.clear();
      bytes = 0;
    }
    cur.push_back(k);
    bytes += b;
  }
  if (!cur.empty()) buckets_.push_back(std::move(cur));
  for (size_t b = 0; b < buckets_.size(); ++b) {
    int64_t n = 0;
    for (size_t k : buckets_[b]) {
      bucket_of_[k] = b;
      n += params_[k].numel();
    }
    flat_.push_back(torch::empty({n}, params_[buckets_[b].front()].options().dtype(wire)));
  }
  work_.resize(buckets_.size());
  pending_.assign(buckets_.size(), 0);
  ready_.assign(params_.size(), false);
  if (comm_.world_size() > 1) {
    // Hooks on the gradient accumulation: fires after the .grad of a leaf is updated.
    for (size_t k = 0; k < params_.size(); ++k) {
      auto& p = params_[k];
      const unsigned id = p.register_hook([this, k](const torch::Tensor& grad) {
        on_grad_ready(k);
        return grad;
      });
      hooks_.emplace_back(p, id);
    }
  }
}

GradReducer::~GradReducer() {
  for (auto& [p, id] : hooks_) p.remove_hook(id);
}

void GradReducer::arm() {
  armed_ = comm_.world_size() > 1 && overlap_;
  started_during_backward_ = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = static_cast<int64_t>(buckets_[b].size());
  std::fill(ready_.begin(), ready_.end(), false);
  next_launch_ = 0;
}

void GradReducer::on_grad_ready(size_t k) {
  // A tensor hook on a leaf runs inside its AccumulateGrad node, just *before* the
  // gradient is added to .grad. So a bucket is safe to reduce once all its hooks have
  // fired and the engine has moved on to another parameter's node: launch every complete
  // bucket except the one this parameter belongs to. Buckets start strictly in index
  // order, because MPI and NCCL need every rank to issue collectives in the same order
  // (a rank whose micro-batch was empty runs no backward and starts them all in finish()).
  if (!armed_ || ready_[k]) return;
  ready_[k] = true;
  const size_t b = bucket_of_[k];
  while (next_launch_ < buckets_.size() && next_launch_ != b && pending_[next_launch_] == 0) launch(next_launch_++);
  --pending_[b];
  for (auto& w : work_)
    if (w) w->test();  // drive MPI progress while backward continues
}

void GradReducer::launch(size_t b) {
  int64_t at = 0;
  for (size_t k : buckets_[b]) {
    const auto& g = params_[k].grad();
    flat_[b].narrow(0, at, g.numel()).copy_(g.reshape({-1}));
    at += g.numel();
  }
  work_[b] = rank_order_ ? comm_.all_reduce_sum_rank_order(flat_[b]) : comm_.all_reduce_sum(flat_[b]);
  if (armed_) ++started_during_backward_;
}

void GradReducer::finish() {
  if (comm_.world_size() == 1) return;
  armed_ = false;
  while (next_launch_ < buckets_.size()) launch(next_launch_++);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    work_[b]->wait();
    work_[b].reset();
    int64_t at = 0;
    for (size_t k : buckets_[b]) {
      auto g = params_[k].mutable_grad();
      g.copy_(flat_[b].narrow(0, at, g.numel()).view_as(g));
      at += g.numel();
    }
  }
}

}  // namespace nmt::dist
