#pragma once
// train.precision=bf16 on a CPU: how fast its bf16 products run against fp32's on the model's
// own products, said on the start line, with a warning where bf16 is the slower.
//
// Why measure: the CPU flags (wants_cpu_bf16) say that bf16 instructions exist, not how fast
// they run. AMX and AMD's Zen 4 run bf16 products about 2x fp32's and more; an Intel Xeon
// (family 6 model 207) whose VM hides AMX, left with AVX512_BF16's dot products, ran them at
// 0.60-0.66x fp32's and trained at 0.73-0.75x (bench/README.md). The run still goes on in bf16:
// it was asked for, and a bf16 checkpoint resumes bit for bit only in bf16.
#include <string>

#include "config/config.h"
#include "model/kernels/bf16_gemm.h"
#include "model/model_config.h"

namespace nmt::runtime {

struct Bf16SpeedCheck {
  std::string text;     // "bf16 412 vs fp32 212 GFLOP/s on the model's products (1.94x)"
  std::string warning;  // "" unless the bf16 products ran slower than the fp32 ones
};

// Words a measurement (`what`: "the model's products"); pure, for hand-made figures in tests.
Bf16SpeedCheck word_bf16_speed(const model::kernels::Bf16Speed& speed, const std::string& what);

// Training's: the model's forward and backward products at the micro-batch's rows, about 0.5 s.
Bf16SpeedCheck check_training_bf16_speed(const config::Config& cfg, const model::ModelConfig& model);

// Decoding's: the forward products at a decoding step's 256 rows, about 0.3 s. The caller
// checks first that the model fits (check_fits): the timing allocates each weight.
Bf16SpeedCheck check_decoding_bf16_speed(const config::Config& cfg, const model::ModelConfig& model);

}  // namespace nmt::runtime
