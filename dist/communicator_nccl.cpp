// NCCL backend. The unique id travels from rank 0 by MPI_Bcast (llm.c's bootstrap); every
// collective runs on a dedicated high-priority stream, ordered against the compute
// stream with events in both directions, so neither the host nor the compute stream ever
// waits for communication that it does not depend on.
#include "dist/communicator_nccl.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include "dist/dist_error.h"
#include "dist/mpi_gather.h"

namespace nmt::dist {
namespace {

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw DistError(std::string("NCCL ") + what + " failed: " + ncclGetErrorString(rc));
}

ncclDataType_t nccl_type(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return ncclFloat32;
    case torch::kFloat64: return ncclFloat64;
    case torch::kFloat16: return ncclFloat16;
    case torch::kBFloat16: return ncclBfloat16;
    case torch::kInt64: return ncclInt64;
    case torch::kInt32: return ncclInt32;
    case torch::kUInt8: return ncclUint8;
    default: throw DistError(std::string("NCCL backend: unsupported dtype ") + c10::toString(t.scalar_type()));
  }
}

class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<at::cuda::CUDAEvent> done, c10::cuda::CUDAStream compute)
      : done_(std::move(done)), compute_(compute) {}
  // The compute stream waits on the GPU for the reduction; the host does not block.
  void wait() override { done_->block(compute_); }
  bool test() override { return done_->query(); }

 private:
  std::shared_ptr<at::cuda::CUDAEvent> done_;
  c10::cuda::CUDAStream compute_;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const ProcessGroup& g, const torch::Device& device)
      : rank_(g.rank()), world_(g.world_size()), device_(device),
        stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/true, device.index())) {
    ncclUniqueId id;
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    c10::cuda::CUDAGuard guard(device_);
    check_nccl(ncclCommInitRank(&comm_, world_, id, rank_), "ncclCommInitRank");
  }
  ~NcclCommunicator() override { ncclCommDestroy(comm_); }
  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  torch::Device device() const override { return device_; }

  std::unique_ptr<Work> all_reduce_sum(torch::Tensor t) override {
    check(t, "all_reduce");
    c10::cuda::CUDAGuard guard(device_);
    auto compute = c10::cuda::getCurrentCUDAStream(device_.index());
    order_after(compute);
    check_nccl(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), ncclSum, comm_, stream_.stream()),
               "ncclAllReduce");
    // The caching allocator must not reuse the buffer until the comm stream is done.
    c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream_);
    auto done = std::make_shared<at::cuda::CUDAEvent>();
    done->record(stream_);
    return std::make_unique<NcclWork>(done, compute);
  }
  void broadcast(torch::Tensor t, int root) override {
    check(t, "broadcast");
    c10::cuda::CUDAGuard guard(device_);
    auto compute = c10::cuda::getCurrentCUDAStream(device_.index());
    order_after(compute);
    check_nccl(ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), root, comm_, stream_.stream()),
               "ncclBroadcast");
    at::cuda::CUDAEvent done;
    done.record(stream_);
    done.block(compute);
  }
  void barrier() override {
    auto one = torch::ones({1}, torch::TensorOptions().device(device_));
    all_reduce_sum(one)->wait();
    c10::cuda::getCurrentCUDAStream(device_.index()).synchronize();
  }
  std::vector<std::string> all_gather_bytes(const std::string& mine) override {
    return gather_bytes(mine, world_, MPI_COMM_WORLD);  // small host objects: MPI bootstrapped us anyway
  }

 private:
  void check(const torch::Tensor& t, const char* op) const {
    if (t.device() != device_ || !t.is_contiguous())
      throw DistError(std::string("NCCL backend ") + op + ": needs a contiguous tensor on " + device_.str());
  }
  // The comm stream starts only after the compute stream has produced the data.
  void order_after(const c10::cuda::CUDAStream& compute) {
    at::cuda::CUDAEvent ready;
    ready.record(compute);
    ready.block(stream_);
  }

  int rank_, world_;
  torch::Device device_;
  c10::cuda::CUDAStream stream_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const ProcessGroup& group, const torch::Device& device) {
  if (!device.is_cuda()) throw DistError("NCCL backend needs a CUDA device, got " + device.str());
  return std::make_unique<NcclCommunicator>(group, device);
}

}  // namespace nmt::dist
