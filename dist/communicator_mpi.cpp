#include "dist/communicator_mpi.h"

#include <mpi.h>

#include <functional>
#include <utility>

#include "dist/dist_error.h"
#include "dist/mpi_gather.h"
#include "dist/watchdog.h"

namespace nmt::dist {
namespace {

// MPI has no 16-bit floats: they travel as 2-byte words and are summed by our own
// operation, in float, rounded once per addition (as NCCL sums bf16/fp16).
template <typename T>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = T(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

MPI_Op sum_op(const torch::Tensor& t) {
  static MPI_Op bf16 = MPI_OP_NULL, fp16 = MPI_OP_NULL;  // created once, live until MPI_Finalize
  switch (t.scalar_type()) {
    case torch::kBFloat16:
      if (bf16 == MPI_OP_NULL) MPI_Op_create(&sum_16bit<c10::BFloat16>, /*commute=*/1, &bf16);
      return bf16;
    case torch::kFloat16:
      if (fp16 == MPI_OP_NULL) MPI_Op_create(&sum_16bit<c10::Half>, /*commute=*/1, &fp16);
      return fp16;
    default: return MPI_SUM;
  }
}

MPI_Datatype mpi_type(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kBFloat16:
    case torch::kFloat16: return MPI_UINT16_T;  // summed by sum_op's own function
    case torch::kFloat32: return MPI_FLOAT;
    case torch::kFloat64: return MPI_DOUBLE;
    case torch::kInt64: return MPI_INT64_T;
    case torch::kInt32: return MPI_INT32_T;
    case torch::kUInt8: return MPI_UINT8_T;
    default: throw DistError(std::string("MPI backend: unsupported dtype ") + c10::toString(t.scalar_type()));
  }
}

void check_cpu(const torch::Tensor& t, const char* op) {
  if (!t.device().is_cpu() || !t.is_contiguous())
    throw DistError(std::string("MPI backend ") + op + ": needs a contiguous CPU tensor (use dist.backend=nccl for CUDA)");
}

class MpiWork : public Work {
 public:
  // `then` runs once, after the request completes, before wait() returns.
  MpiWork(MPI_Request req, torch::Tensor keep, std::string op, std::shared_ptr<Watchdog> watchdog,
          std::function<void()> then = nullptr)
      : req_(req), keep_(std::move(keep)), op_(std::move(op)), watchdog_(std::move(watchdog)), then_(std::move(then)) {}
  ~MpiWork() override {
    // Never block in a destructor on a job that already failed (it may never complete);
    // otherwise finish the request, bounded by the watchdog.
    if (req_ == MPI_REQUEST_NULL) return;
    if (collectives_broken()) {  // MPI may still write into the buffer: never free it
      keep_forever(std::make_shared<torch::Tensor>(std::move(keep_)));
      return;
    }
    try {
      wait_request(req_, op_, *watchdog_);
    } catch (const std::exception&) {  // the job is ending already; its first error was reported
    }
  }
  void wait() override {
    wait_request(req_, op_, *watchdog_);
    if (then_) std::exchange(then_, nullptr)();
  }
  bool test() override {
    int done = 0;
    // MPI has freed a failed request: report the error now, it cannot be waited for again.
    if (const int rc = MPI_Test(&req_, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
      throw_request_error(rc, op_, *watchdog_);
    return done != 0;
  }

 private:
  MPI_Request req_;
  torch::Tensor keep_;  // the buffer must outlive the request
  std::string op_;
  std::shared_ptr<Watchdog> watchdog_;
  std::function<void()> then_;
};

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(const ProcessGroup& g, double timeout_s) : rank_(g.rank()), world_(g.world_size()) {
    // A private communicator: our collectives never match anyone else's on COMM_WORLD.
    // Errors come back as codes (and become DistError naming the collective) instead of
    // Open MPI aborting the process with a message of its own.
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    watchdog_ = std::make_shared<Watchdog>(timeout_s, comm_);
  }
  ~MpiCommunicator() override {
    if (!collectives_broken()) MPI_Comm_free(&comm_);
  }
  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  torch::Device device() const override { return torch::kCPU; }
  void set_phase(const std::string& phase) override { watchdog_->set_phase(phase); }

  std::unique_ptr<Work> all_reduce_sum(torch::Tensor t) override {
    check_cpu(t, "all_reduce");
    MPI_Request req;
    watchdog_->next_sequence();
    check_posted(
        MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), mpi_type(t), sum_op(t), comm_, &req),
        "MPI_Iallreduce");
    return std::make_unique<MpiWork>(req, t, describe_collective("all_reduce", t), watchdog_);
  }
  std::unique_ptr<Work> all_reduce_sum_rank_order(torch::Tensor t) override {
    check_cpu(t, "all_reduce");
    auto rows = torch::empty({world_, t.numel()}, t.options());
    MPI_Request req;
    watchdog_->next_sequence();
    const int n = static_cast<int>(t.numel());
    check_posted(MPI_Iallgather(t.data_ptr(), n, mpi_type(t), rows.data_ptr(), n, mpi_type(t), comm_, &req),
                 "MPI_Iallgather");
    auto sum = [t, rows]() mutable {
      torch::NoGradGuard no_grad;
      auto flat = t.view({-1});
      flat.copy_(rows[0]);
      for (int64_t r = 1; r < rows.size(0); ++r) flat.add_(rows[r]);
    };
    return std::make_unique<MpiWork>(req, rows, describe_collective("all_reduce (rank order)", t), watchdog_, sum);
  }
  void broadcast(torch::Tensor t, int root) override {
    check_cpu(t, "broadcast");
    MPI_Request req;
    watchdog_->next_sequence();
    check_posted(MPI_Ibcast(t.data_ptr(), static_cast<int>(t.numel()), mpi_type(t), root, comm_, &req), "MPI_Ibcast");
    try {
      wait_request(req, describe_collective("broadcast", t), *watchdog_);
    } catch (...) {
      keep_forever(std::make_shared<torch::Tensor>(t));  // MPI may still write into it
      throw;
    }
  }
  void barrier() override {
    MPI_Request req;
    watchdog_->next_sequence();
    check_posted(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
    wait_request(req, "barrier", *watchdog_);
  }
  std::vector<std::string> all_gather_bytes(const std::string& mine) override {
    return gather_bytes(mine, world_, comm_, *watchdog_);
  }

 private:
  int rank_, world_;
  MPI_Comm comm_;
  std::shared_ptr<Watchdog> watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const ProcessGroup& group, double timeout_s) {
  return std::make_unique<MpiCommunicator>(group, timeout_s);
}

}  // namespace nmt::dist
