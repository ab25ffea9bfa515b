#pragma once
// The device a process computes on (train.device); train, evaluate and translate ask here.
#include <torch/torch.h>

#include <string>

#include "config/config.h"

namespace nmt::runtime {

// train.device: auto = CUDA device `local_rank` when CUDA is available, else CPU. A CUDA
// device chosen here also becomes the process's current device, so that LibTorch's default
// streams, synchronisations and NCCL's set-up address this rank's GPU, not GPU 0.
torch::Device choose_device(const config::TrainConfig& cfg, int local_rank);

// The device as the start lines name it: "cpu", or "cuda:0 (NVIDIA H100 80GB HBM3)" (the GPU's
// model, so that a log or a sweep table says which GPU a run had, not just its index).
std::string describe_device(const torch::Device& device);

// This process's rank among those on its host, as the launcher says it (Open MPI, Slurm,
// torchrun); 0 when started alone. For the tools that do not join an MPI job (translate).
int launcher_local_rank();

}  // namespace nmt::runtime
