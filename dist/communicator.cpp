#include "dist/communicator.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "dist/communicator_mpi.h"
#include "dist/dist_error.h"
#ifdef NMTRAIN_WITH_CUDA
#include "dist/communicator_nccl.h"
#endif

namespace nmt::dist {

double Communicator::all_reduce_sum(double value) { return all_reduce_sum(std::vector<double>{value})[0]; }

std::vector<double> Communicator::all_reduce_sum(const std::vector<double>& values) {
  if (world_size() == 1) return values;
  auto t = torch::tensor(values, torch::kFloat64);
  auto dev = device();
  if (!dev.is_cpu()) t = t.to(dev);
  all_reduce_sum(t)->wait();
  t = t.cpu();
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

double Communicator::all_reduce_max(double value) {
  if (world_size() == 1) return value;
  double m = value;
  for (const std::string& s : all_gather_bytes(std::string(reinterpret_cast<const char*>(&value), sizeof(double)))) {
    double v;
    std::memcpy(&v, s.data(), sizeof(double));
    m = std::max(m, v);
  }
  return m;
}

std::string describe_collective(const char* op, const torch::Tensor& t) {
  return std::string(op) + " " + c10::toString(t.scalar_type()) + " x " + std::to_string(t.numel());
}

bool nccl_compiled() {
#ifdef NMTRAIN_WITH_CUDA
  return true;
#else
  return false;
#endif
}

#ifdef NMTRAIN_WITH_CUDA
namespace {

// NCCL refuses two ranks on one GPU only once its communicator is half made (an MPI_Abort
// with Open MPI's banner and no word of ours), so the count is checked before it starts.
void refuse_shared_gpus(const ProcessGroup& group) {
  const int gpus = static_cast<int>(torch::cuda::device_count());
  if (group.local_size() <= gpus) return;
  throw DistSetupError("dist.backend=nccl needs a GPU of its own for every rank, but host " + host_name() + " runs " +
                  std::to_string(group.local_size()) + " ranks and sees " + std::to_string(gpus) +
                  " CUDA device(s): start at most " + std::to_string(gpus) +
                  " rank(s) per host (mpirun --map-by ppr:" + std::to_string(gpus) + ":node)");
}

}  // namespace
#endif

std::unique_ptr<Communicator> make_communicator(const DistConfig& cfg, const ProcessGroup& group,
                                                const torch::Device& device) {
  Backend backend = cfg.backend;
  if (backend == Backend::kAuto) backend = device.is_cuda() ? Backend::kNccl : Backend::kMpi;
  if (backend == Backend::kMpi) {
    if (!device.is_cpu())
      throw DistError("dist.backend=mpi reduces CPU tensors, but training runs on " + device.str() +
                      " (use dist.backend=nccl or auto)");
    return make_mpi_communicator(group, cfg.timeout_s);
  }
#ifdef NMTRAIN_WITH_CUDA
  refuse_shared_gpus(group);
  return make_nccl_communicator(group, device, cfg.timeout_s);
#else
  throw DistError("dist.backend=nccl: this build has no NCCL backend (configure with NMTRAIN_WITH_CUDA=ON)");
#endif
}

}  // namespace nmt::dist
