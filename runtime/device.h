#pragma once
// The device a process computes on (train.device); train, evaluate and translate ask here.
#include <torch/torch.h>

#include "config/config.h"

namespace nmt::runtime {

// train.device: auto = CUDA device `local_rank` when CUDA is available, else CPU.
torch::Device choose_device(const config::TrainConfig& cfg, int local_rank);

}  // namespace nmt::runtime
