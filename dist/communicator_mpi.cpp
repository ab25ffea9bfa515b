#include "dist/communicator_mpi.h"

#include <mpi.h>

#include "dist/dist_error.h"
#include "dist/mpi_gather.h"

namespace nmt::dist {
namespace {

MPI_Datatype mpi_type(const torch::Tensor& t) {
  switch (t.scalar_type()) {
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
  MpiWork(MPI_Request req, torch::Tensor keep) : req_(req), keep_(std::move(keep)) {}
  ~MpiWork() override {
    if (req_ != MPI_REQUEST_NULL) MPI_Wait(&req_, MPI_STATUS_IGNORE);
  }
  void wait() override {
    if (MPI_Wait(&req_, MPI_STATUS_IGNORE) != MPI_SUCCESS) throw DistError("MPI_Wait on all-reduce failed");
  }
  bool test() override {
    int done = 0;
    MPI_Test(&req_, &done, MPI_STATUS_IGNORE);
    return done != 0;
  }

 private:
  MPI_Request req_;
  torch::Tensor keep_;  // the buffer must outlive the request
};

class MpiCommunicator : public Communicator {
 public:
  explicit MpiCommunicator(const ProcessGroup& g) : rank_(g.rank()), world_(g.world_size()) {
    // A private communicator: our collectives never match anyone else's on COMM_WORLD.
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  }
  ~MpiCommunicator() override { MPI_Comm_free(&comm_); }
  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  torch::Device device() const override { return torch::kCPU; }

  std::unique_ptr<Work> all_reduce_sum(torch::Tensor t) override {
    check_cpu(t, "all_reduce");
    MPI_Request req;
    if (MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), mpi_type(t), MPI_SUM, comm_, &req) !=
        MPI_SUCCESS)
      throw DistError("MPI_Iallreduce failed");
    return std::make_unique<MpiWork>(req, t);
  }
  void broadcast(torch::Tensor t, int root) override {
    check_cpu(t, "broadcast");
    if (MPI_Bcast(t.data_ptr(), static_cast<int>(t.numel()), mpi_type(t), root, comm_) != MPI_SUCCESS)
      throw DistError("MPI_Bcast failed");
  }
  void barrier() override { MPI_Barrier(comm_); }
  std::vector<std::string> all_gather_bytes(const std::string& mine) override {
    return gather_bytes(mine, world_, comm_);
  }

 private:
  int rank_, world_;
  MPI_Comm comm_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const ProcessGroup& group) {
  return std::make_unique<MpiCommunicator>(group);
}

}  // namespace nmt::dist
