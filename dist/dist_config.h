#pragma once
// Plain configuration of the distributed layer (no YAML here: trainer/ loads it).
#include <cstdint>
#include <string>

namespace nmt::dist {

struct DistConfig {
  std::string backend = "auto";  // auto|nccl|mpi: auto = NCCL for CUDA tensors, MPI for CPU ones
  double bucket_mb = 25.0;       // gradient bucket size cap in MiB
  int64_t check_params_interval = 0;  // every N updates check parameters agree across ranks (0 = off)
};

}  // namespace nmt::dist
