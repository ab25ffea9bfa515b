#pragma once
// train.gemm for decoding (translate, evaluate): the library, and the weights whose forward runs
// on a transposed copy kept for the whole job (model/kernels/gemm_plan.h's inference plan).
//
// Decoding multiplies the same weights at every step, at a step's few rows, so both choices
// are timed there: each weight's forward at 256 rows, as stored and on the kept copy, under
// each library train.gemm allows (both under auto), for 0.15 s each. The library is the one whose
// better way per weight is faster in all (oneDNN by at least 5%, as in training); the plan,
// the weights whose copy won by 5% under it. A job of seconds pays for this in its start-up:
// about 0.2 s per library (2-core AMD EPYC); timing training's shapes instead would take 1.9 s.
#include <cstdint>

#include "config/config.h"
#include "dist/communicator.h"
#include "model/model_config.h"
#include "runtime/gemm_choice.h"

namespace nmt::runtime {

// A decoding step's rows as the timings at start take them (the GEMM library here, bf16 against
// fp32 in bf16_speed_check.h): the live hypotheses of a batch of a few hundred sentences (times
// the beam, fewer as sentences finish).
inline constexpr int64_t kDecodingRowsTimed = 256;

// Measured on this process alone; sets nothing. Throws config::ConfigError for onednn where it
// cannot be loaded, and for a model that does not fit in memory (runtime::check_fits). On
// CUDA: MKL and no plan (no CPU GEMM runs).
GemmDecision decide_decoding_gemm(const config::Config& cfg, const model::ModelConfig& model,
                                  const torch::Device& device);

// Sets the backend and the inference plan that `decision` names.
void apply_decoding_gemm(const GemmDecision& decision);

// Rank 0's decision on every rank, applied: each rank's lines come out as rank 0's would.
// Collective on the CPU.
GemmDecision choose_decoding_gemm(const config::Config& cfg, const model::ModelConfig& model, dist::Communicator& comm,
                                  const torch::Device& device);

// What translate and evaluate print under --verbose, the set-up that decides their speed (and,
// for the GEMM library, the order of the sums): "device cpu, 2 threads, gemm <why>, attention
// <kernel>".
std::string decoding_setup_text(const GemmDecision& decision, const torch::Device& device, int64_t threads,
                                const char* attention);

// The whole set-up of a decoding process, the one call of translate and of evaluate (on every
// rank): the GEMM library and kept transposed weights (rank 0's, when `comm` is given, else
// this process's own), the attention kernel and the CUDA math settings. Returns the line
// --verbose prints (decoding_setup_text) and, under train.precision=bf16 where bf16 products
// ran slower than fp32's here (timed on rank 0), the warning to print whatever the verbosity.
struct DecodingSetup {
  std::string text, warning;
};
DecodingSetup set_up_decoding(const config::Config& cfg, const torch::Device& device, dist::Communicator* comm);

}  // namespace nmt::runtime
