#pragma once
// Collectives behind one narrow interface (Marian's ICommunicator, fairseq's process
// group): an MPI backend for CPU tensors and an NCCL backend for CUDA tensors, chosen by
// one factory. Both are asynchronous in the same way, so the gradient reducer's logic
// runs, and is tested, on CPU exactly as it runs on GPUs.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "dist/dist_config.h"
#include "dist/process_group.h"

namespace nmt::dist {

// A collective in flight. wait() returns once its result may be used (for NCCL: once the
// compute stream is ordered after it).
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  // Non-blocking check that also drives progress (MPI progresses collectives only
  // inside MPI calls). True once complete.
  virtual bool test() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual torch::Device device() const = 0;  // where its tensors live
  // What the job is doing ("update 37"): named in the message of a collective that times
  // out (dist.timeout_s) or fails.
  virtual void set_phase(const std::string& phase) = 0;

  // In-place sum over ranks of a contiguous tensor; returns at once.
  virtual std::unique_ptr<Work> all_reduce_sum(torch::Tensor tensor) = 0;
  // The same sum taken in rank order, ((x0 + x1) + x2) + ..., as one rank accumulates the
  // gradients of its micro-batches: N ranks then equal one rank with update_freq N bit
  // for bit (dist.deterministic_reduce). Gathers every rank's tensor: (N-1)/N x n
  // received per rank instead of a ring all-reduce's 2(N-1)/N x n, and N x n memory.
  virtual std::unique_ptr<Work> all_reduce_sum_rank_order(torch::Tensor tensor) = 0;
  // In-place broadcast from `root` (blocking).
  virtual void broadcast(torch::Tensor tensor, int root) = 0;
  virtual void barrier() = 0;
  // Every rank's bytes, in rank order (small objects: hypotheses, flags, checksums).
  virtual std::vector<std::string> all_gather_bytes(const std::string& mine) = 0;

  // Blocking convenience for scalars: sum / max over ranks; several sums in one collective.
  double all_reduce_sum(double value);
  std::vector<double> all_reduce_sum(const std::vector<double>& values);
  double all_reduce_max(double value);
};

// "all_reduce float32 x 1048576": how messages about a collective name it.
std::string describe_collective(const char* op, const torch::Tensor& t);

// backend "mpi" (CPU tensors), "nccl" (CUDA tensors), or "auto" (by `device`).
// Throws DistError if the backend does not fit the device or was not compiled in.
std::unique_ptr<Communicator> make_communicator(const DistConfig& cfg, const ProcessGroup& group,
                                                const torch::Device& device);

// Whether this build has the NCCL backend (NMTRAIN_WITH_CUDA).
bool nccl_compiled();

}  // namespace nmt::dist
