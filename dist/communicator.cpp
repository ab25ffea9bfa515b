#include "dist/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dist/communicator_mpi.h"
#include "dist/dist_error.h"
#ifdef NMTRAIN_WITH_CUDA
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdio>

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
// with Open MPI's banner and no word of ours), so it is checked before it starts. By the GPU's
// PCI bus id, not its index: where each rank sees only its own GPU (CUDA_VISIBLE_DEVICES, Slurm's
// --gpus-per-task), every rank's device 0 is another GPU. Collective.
void refuse_shared_gpus(const ProcessGroup& group, const torch::Device& device) {
  if (group.world_size() == 1) return;
  constexpr int kRecord = 160;  // "host bus-id", NUL-padded
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device.index()) != cudaSuccess) bus[0] = '?';
  std::vector<char> mine(kRecord, '\0'), all(static_cast<size_t>(kRecord) * group.world_size());
  std::snprintf(mine.data(), kRecord, "%s %s", host_name().c_str(), bus);
  MPI_Allgather(mine.data(), kRecord, MPI_CHAR, all.data(), kRecord, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<int> sharing;
  for (int r = 0; r < group.world_size(); ++r)
    if (std::strncmp(all.data() + static_cast<size_t>(r) * kRecord, mine.data(), kRecord) == 0) sharing.push_back(r);
  if (sharing.size() < 2) return;
  std::string ranks;
  for (int r : sharing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  const int gpus = static_cast<int>(torch::cuda::device_count());
  throw DistSetupError("dist.backend=nccl needs a GPU of its own for every rank, but ranks " + ranks + " on host " +
                       host_name() + " share the GPU at PCI " + bus + " (this host runs " +
                       std::to_string(group.local_size()) + " ranks and each sees " + std::to_string(gpus) +
                       " CUDA device(s)): start at most one rank per GPU (mpirun --map-by ppr:" + std::to_string(gpus) +
                       ":node), or give each rank its own GPU");
}

// dist.shared_gpu=allow: what NCCL needs before its communicator is made for ranks to share a
// GPU (its documentation's settings for the experimental opt-in); a value the user set stays.
void allow_shared_gpus() {
  setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  setenv("NCCL_MAX_CTAS", "4", 0);
}

}  // namespace
#endif

std::unique_ptr<Communicator> make_communicator(const DistConfig& cfg, const ProcessGroup& group,
                                                const torch::Device& device) {
  Backend backend = cfg.backend;
  if (backend == Backend::kAuto) backend = device.is_cuda() ? Backend::kNccl : Backend::kMpi;
  if (cfg.shared_gpu == SharedGpu::kAllow && (backend == Backend::kMpi || !device.is_cuda()))
    throw DistSetupError("dist.shared_gpu=allow lets NCCL ranks share one GPU, but this job " +
                         (backend == Backend::kMpi ? std::string("reduces with dist.backend=mpi")
                                                   : "runs on " + device.str()) +
                         ": the key applies to NCCL on CUDA only (remove it, or set dist.shared_gpu=refuse)");
  if (backend == Backend::kMpi) {
    if (!device.is_cpu())
      throw DistSetupError("dist.backend=mpi reduces CPU tensors, but training runs on " + device.str() +
                      " (use dist.backend=nccl or auto)");
    return make_mpi_communicator(group, cfg.timeout_s);
  }
#ifdef NMTRAIN_WITH_CUDA
  const bool shared = cfg.shared_gpu == SharedGpu::kAllow;
  if (shared) allow_shared_gpus();
  else if (device.is_cuda()) refuse_shared_gpus(group, device);  // a CPU device: refused just below
  return make_nccl_communicator(group, device, cfg.timeout_s, shared);
#else
  throw DistSetupError("dist.backend=nccl: this build has no NCCL backend (configure with NMTRAIN_WITH_CUDA=ON)");
#endif
}

}  // namespace nmt::dist
