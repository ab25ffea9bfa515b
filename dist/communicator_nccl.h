#pragma once
#include "dist/communicator.h"

namespace nmt::dist {

// NCCL backend: CUDA tensors on `device` (one GPU per local rank, or several ranks on one GPU
// with `shared_gpu`, dist.shared_gpu=allow). Compiled only with NMTRAIN_WITH_CUDA, against the
// NCCL the torch wheel loads. Its name() names the NCCL version loaded (the start line shows it).
// A collective not done within `timeout_s` (or an NCCL async error) aborts the
// communicator and ends the job (exit kFaultExit).
std::unique_ptr<Communicator> make_nccl_communicator(const ProcessGroup& group, const torch::Device& device,
                                                     double timeout_s, bool shared_gpu = false);

}  // namespace nmt::dist
