#pragma once
// Model FLOPs of a training step, counted as bench/README.md describes: matrix-multiply
// FLOPs only (2 per multiply-add), linear layers on real (non-pad) tokens, attention on
// the padded lengths it is computed over, the output projection on real target tokens;
// backward = 2 x forward, so a training step is 3 x forward.
#include <cstdint>

#include "model/model_config.h"

namespace nmt::metrics {

struct BatchShape {
  int64_t sentences = 0, src_len = 0, tgt_len = 0;  // padded tensor shapes
  int64_t src_tokens = 0, tgt_tokens = 0;           // non-pad tokens
};

double training_flops(const model::ModelConfig& c, const BatchShape& b);

}  // namespace nmt::metrics
