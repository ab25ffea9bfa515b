#pragma once
// Checkpoint averaging (fairseq's average_checkpoints.py, Marian's average.py): the
// element-wise mean of the model parameters of several checkpoints of one run.
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"

namespace nmt::checkpoint {

// The newest `n` update_<N>.pt files of a run directory, oldest first. Throws if fewer.
std::vector<std::string> last_checkpoints(const std::string& run_dir, int64_t n);

// Averages the inputs' model parameters (accumulated in float64); everything else comes
// from the last input. Every input must have the same parameters, shapes and vocabulary;
// errors name the file and the parameter.
Checkpoint average_checkpoints(const std::vector<std::string>& paths);

}  // namespace nmt::checkpoint
