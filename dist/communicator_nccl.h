#pragma once
#include "dist/communicator.h"

namespace nmt::dist {

// NCCL backend: CUDA tensors on `device` (one GPU per local rank). Compiled only with
// NMTRAIN_WITH_CUDA, against the NCCL the torch wheel loads.
std::unique_ptr<Communicator> make_nccl_communicator(const ProcessGroup& group, const torch::Device& device);

}  // namespace nmt::dist
