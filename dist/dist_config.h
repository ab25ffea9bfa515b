#pragma once
// Plain configuration of the distributed layer (no YAML here: config/config_loader.cpp
// reads it, with the rest of the configuration).
#include <cstdint>

namespace nmt::dist {

// dist.backend: which library carries the collectives.
enum class Backend { kAuto, kNccl, kMpi };  // auto = NCCL for CUDA tensors, MPI for CPU ones
// dist.grad_dtype: the type gradients travel (and are summed) in.
enum class GradDtype { kFp32, kBf16, kFp16 };
// dist.shared_gpu: whether NCCL ranks may share one GPU. refuse: a job that puts two ranks on one
// GPU ends at start with a message (NCCL would abort half-way). allow: NCCL >= 2.30's opt-in
// (NCCL_MULTI_RANK_GPU_ENABLE), for running the multi-rank path on a one-GPU machine: testing,
// not speed.
enum class SharedGpu { kRefuse, kAllow };

struct DistConfig {
  Backend backend = Backend::kAuto;  // auto|nccl|mpi
  // Gradient bucket size cap in MiB. 4, not DDP's 25: the recipes' models have 30 MB of
  // gradients, which 25 MiB buckets cut in 2, leaving nothing to overlap with backward
  // (bench/README.md, "Across hosts": 2 hosts on 1 Gbit/s links, efficiency 0.82 -> 0.94).
  double bucket_mb = 4.0;
  int64_t check_params_interval = 0;  // every N updates check parameters agree across ranks (0 = off)
  double timeout_s = 600;        // a rank waiting longer than this in any collective ends the job (hung peer, cut link)
  bool deterministic_reduce = false;  // sum gradients in rank order: N ranks == 1 rank x update_freq N, bitwise
  GradDtype grad_dtype = GradDtype::kFp32;  // fp32|bf16|fp16; 16 bits halve the traffic
  bool overlap = true;           // start each gradient bucket's all-reduce during backward (false: after it, for measuring)
  SharedGpu shared_gpu = SharedGpu::kRefuse;  // refuse|allow: NCCL ranks sharing one GPU (allow: for tests, not speed)
};

}  // namespace nmt::dist
