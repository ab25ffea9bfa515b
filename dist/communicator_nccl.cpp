// NCCL backend. The unique id travels from rank 0 by MPI_Bcast (llm.c's bootstrap); every
// collective runs on a dedicated high-priority stream, ordered against the compute
// stream with events in both directions, so neither the host nor the compute stream ever
// waits for communication that it does not depend on.
//
// Since the host never blocks on a collective, the watchdog (dist.timeout_s) is a thread:
// it follows every collective's completion event and polls NCCL's asynchronous error
// state; on a timeout or an error it prints what, where and when, aborts the NCCL
// communicator (ncclCommAbort: ncclCommDestroy could block on a dead peer) and ends the
// job (torch's NCCL watchdog with async error handling does the same).
#include "dist/communicator_nccl.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <mpi.h>
#include <nccl.h>
#include <dlfcn.h>  // dladdr: which libnccl the process loaded
#include <errno.h>  // program_invocation_short_name
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "dist/dist_error.h"
#include "dist/mpi_gather.h"
#include "dist/watchdog.h"

namespace nmt::dist {
namespace {

// NCCL_VERSION_CODE of the first NCCL that lets ranks share a GPU (NCCL_MULTI_RANK_GPU_ENABLE).
constexpr int kNcclSharedGpuVersion = 23000;

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

// Follows the collectives in flight (in issue order, which is completion order on one
// stream) and NCCL's async error state; ends the job on a timeout or an error.
class NcclMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  NcclMonitor(ncclComm_t comm, torch::Device device, double timeout_s, const ProcessGroup& group,
              Watchdog& watchdog)
      : comm_(comm), device_(device), timeout_s_(timeout_s), group_(group), rank_(group.rank()),
        host_(watchdog.host(group.rank())), watchdog_(watchdog) {
    thread_ = std::thread([this] { loop(); });
  }
  ~NcclMonitor() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void track(std::shared_ptr<at::cuda::CUDAEvent> done, std::string op, int64_t seq, std::string phase) {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.push_back({std::move(done), std::move(op), seq, std::move(phase), Clock::now()});
  }

 private:
  struct InFlight {
    std::shared_ptr<at::cuda::CUDAEvent> done;
    std::string op;
    int64_t seq;
    std::string phase;
    Clock::time_point start;
  };
  void loop() {
    c10::cuda::CUDAGuard on_device(device_);  // the events' device, in this thread too
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      while (!in_flight_.empty() && in_flight_.front().done->query()) in_flight_.pop_front();
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        const std::string what = in_flight_.empty() ? std::string("no collective in flight")
                                                    : fmt::format("collective {} #{} during {}", in_flight_.front().op,
                                                                  in_flight_.front().seq, in_flight_.front().phase);
        fail(fmt::format("NCCL reported an asynchronous error ({}) on rank {} (host {}, pid {}); {}",
                         ncclGetErrorString(async), rank_, host_, getpid(), what));
      }
      if (!in_flight_.empty()) {
        const InFlight& f = in_flight_.front();
        const double waited = std::chrono::duration<double>(Clock::now() - f.start).count();
        // The survivors ask each other over MPI who is missing (dist/watchdog.h), so the
        // message names the dead or hung rank, not only this one.
        if (waited > timeout_s_) fail(watchdog_.stall_report(f.op, f.seq, f.phase, waited));
      }
    }
  }
  [[noreturn]] void fail(const std::string& message) {
    mark_collectives_broken();
    // Named like every other message of a multi-rank job: "train[rank 2 on node07]: error: ...".
    std::fprintf(stderr, "%s: error: %s\n", group_.label(program_invocation_short_name).c_str(), message.c_str());
    std::fflush(stderr);
    ncclCommAbort(comm_);  // frees the GPU kernels stuck in the collective
    group_.abort(kFaultExit);
  }

  ncclComm_t comm_;
  torch::Device device_;
  double timeout_s_;
  const ProcessGroup& group_;
  int rank_;
  std::string host_;
  Watchdog& watchdog_;  // the communicator's: names the peers after a timeout
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<InFlight> in_flight_;
  bool stop_ = false;
  std::thread thread_;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const ProcessGroup& g, const torch::Device& device, double timeout_s, bool shared_gpu)
      : rank_(g.rank()), world_(g.world_size()), device_(device), shared_gpu_(shared_gpu),
        stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/true, device.index())) {
    // Host-side objects (the unique id, gathered bytes) travel over MPI, under the
    // same watchdog as the MPI backend's collectives.
    MPI_Comm_dup(MPI_COMM_WORLD, &mpi_comm_);
    MPI_Comm_set_errhandler(mpi_comm_, MPI_ERRORS_RETURN);
    watchdog_ = std::make_unique<Watchdog>(timeout_s, mpi_comm_);
    ncclUniqueId id;
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Request req;
    watchdog_->next_sequence();
    check_posted(MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, mpi_comm_, &req), "MPI_Ibcast");
    wait_request(req, "broadcast of the NCCL unique id", *watchdog_);
    c10::cuda::CUDAGuard guard(device_);
    check_nccl(ncclCommInitRank(&comm_, world_, id, rank_), "ncclCommInitRank");
    monitor_ = std::make_unique<NcclMonitor>(comm_, device_, timeout_s, g, *watchdog_);
  }
  ~NcclCommunicator() override {
    monitor_.reset();
    // After a failure ncclCommDestroy could wait for a peer that will never come.
    if (collectives_broken()) {
      ncclCommAbort(comm_);
      return;
    }
    ncclCommDestroy(comm_);
    MPI_Comm_free(&mpi_comm_);
  }
  // The frame every collective shares: the tensor checked, the comm stream ordered after
  // the compute stream, `launch` enqueued on the comm stream, the buffer kept from reuse
  // until the comm stream is done with it, and a completion event the watchdog tracks.
  template <typename Launch>
  std::pair<std::shared_ptr<at::cuda::CUDAEvent>, c10::cuda::CUDAStream> enqueue(const torch::Tensor& t,
                                                                                 const char* op, const char* what,
                                                                                 Launch&& launch) {
    check(t, op);
    c10::cuda::CUDAGuard guard(device_);
    auto compute = c10::cuda::getCurrentCUDAStream(device_.index());
    order_after(compute);
    launch();
    c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream_);
    auto done = std::make_shared<at::cuda::CUDAEvent>();
    done->record(stream_);
    monitor_->track(done, describe_collective(what, t), watchdog_->next_sequence(), watchdog_->phase());
    return {done, compute};
  }

  // "nccl 2.27.5", and with dist.shared_gpu=allow a warning that ranks share the GPU.
  std::string name() const override {
    int v = 0;
    ncclGetVersion(&v);  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9
    std::string text = "nccl " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                       std::to_string(v % 100);
    if (shared_gpu_) text += " (ranks share a GPU, dist.shared_gpu=allow: for testing, not speed)";
    return text;
  }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  torch::Device device() const override { return device_; }
  void set_phase(const std::string& phase) override { watchdog_->set_phase(phase); }

  std::unique_ptr<Work> all_reduce_sum(torch::Tensor t) override {
    auto [done, compute] = enqueue(t, "all_reduce", "all_reduce", [&] {
      check_nccl(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), ncclSum, comm_, stream_.stream()),
                 "ncclAllReduce");
    });
    return std::make_unique<NcclWork>(done, compute);
  }
  std::unique_ptr<Work> all_reduce_sum_rank_order(torch::Tensor t) override {
    auto [done, compute] = enqueue(t, "all_reduce", "all_reduce (rank order)", [&] {
      // Allocated, gathered into and summed on the comm stream: the compute stream waits
      // for the result through the returned work, as for all_reduce_sum.
      c10::cuda::CUDAStreamGuard on_comm(stream_);
      torch::Tensor rows = torch::empty({world_, t.numel()}, t.options());
      check_nccl(ncclAllGather(t.data_ptr(), rows.data_ptr(), t.numel(), nccl_type(t), comm_, stream_.stream()),
                 "ncclAllGather");
      torch::NoGradGuard no_grad;
      auto flat = t.view({-1});
      flat.copy_(rows[0]);
      for (int64_t r = 1; r < world_; ++r) flat.add_(rows[r]);
    });
    return std::make_unique<NcclWork>(done, compute);
  }
  void broadcast(torch::Tensor t, int root) override {
    auto [done, compute] = enqueue(t, "broadcast", "broadcast", [&] {
      check_nccl(ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), root, comm_, stream_.stream()),
                 "ncclBroadcast");
    });
    done->block(compute);  // blocking for the caller's stream, as the MPI backend is for the host
  }
  void barrier() override {
    auto one = torch::ones({1}, torch::TensorOptions().device(device_));
    all_reduce_sum(one)->wait();
    c10::cuda::getCurrentCUDAStream(device_.index()).synchronize();
  }
  std::vector<std::string> all_gather_bytes(const std::string& mine) override {
    return gather_bytes(mine, world_, mpi_comm_, *watchdog_);  // small host objects: MPI bootstrapped us anyway
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
  bool shared_gpu_;  // dist.shared_gpu=allow: ranks share this GPU
  c10::cuda::CUDAStream stream_;
  ncclComm_t comm_ = nullptr;
  MPI_Comm mpi_comm_ = MPI_COMM_NULL;
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<NcclMonitor> monitor_;
};

// NCCL before 2.30 ignores NCCL_MULTI_RANK_GPU_ENABLE and ends the job half-way through
// ncclCommInitRank with its own "Duplicate GPU detected": refused here instead, naming the
// library this process loaded (the torch wheel's, unless the pinned one comes first).
void require_shared_gpu_support() {
  int v = 0;
  ncclGetVersion(&v);
  if (v >= kNcclSharedGpuVersion) return;
  Dl_info where{};
  const std::string path = dladdr(reinterpret_cast<void*>(&ncclGetVersion), &where) && where.dli_fname
                               ? where.dli_fname : "an unknown path";
  throw DistSetupError(fmt::format(
      "dist.shared_gpu=allow needs NCCL 2.30 or later (NCCL_MULTI_RANK_GPU_ENABLE), but this process loaded NCCL "
      "{}.{}.{} from {}: put the pinned NCCL (NCCL_VERSION in launch/versions.env; a bundle's env.sh does) first on "
      "LD_LIBRARY_PATH, or give every rank a GPU of its own",
      v / 10000, v / 100 % 100, v % 100, path));
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const ProcessGroup& group, const torch::Device& device,
                                                     double timeout_s, bool shared_gpu) {
  if (!device.is_cuda())
    throw DistSetupError("dist.backend=nccl reduces CUDA tensors, but training runs on " + device.str() +
                         " (use dist.backend=mpi or auto)");
  if (shared_gpu) require_shared_gpu_support();
  return std::make_unique<NcclCommunicator>(group, device, timeout_s, shared_gpu);
}

}  // namespace nmt::dist
