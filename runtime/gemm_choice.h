#pragma once
// train.gemm -> the GEMM backend of this process (model/kernels/gemm.h), the same on every
// rank: N ranks must compute what 1 rank computes, so a measured choice is rank 0's.
#include <optional>
#include <string>

#include "config/config.h"
#include "dist/communicator.h"
#include "model/kernels/gemm.h"
#include "model/kernels/gemm_plan.h"
#include "model/kernels/short_attention.h"
#include "model/model_config.h"

namespace nmt::runtime {

struct GemmDecision {
  model::kernels::GemmBackend backend = model::kernels::GemmBackend::kMkl;
  std::string why;  // for the start line: "mkl (train.gemm)", "onednn (auto: 201 vs 150 GFLOP/s)"
  // Training under oneDNN: the weights whose forward runs on a transposed copy made per call;
  // decoding: on a copy kept (gemm_plan.h).
  std::vector<model::kernels::WeightShape> transposed_forward;
};

// The model's vocabulary: translate and evaluate pass the config's model, whose vocabulary the
// manifest fills in later, and the size preprocess was asked for stands in for it.
int64_t vocab_of(const config::Config& cfg, const model::ModelConfig& model);

// Training's GEMMs are timed at the micro-batch's row count, capped: the ranking settles well
// below the largest batches, and the measurement is start-up time.
int64_t gemm_rows_timed(const config::Config& cfg);

// "256x1024,256x256", or "none".
std::string plan_text(const std::vector<model::kernels::WeightShape>& shapes);

// Throws config::ConfigError for train.gemm = onednn on the CPU where oneDNN cannot be loaded.
void require_onednn_if_asked(const config::Config& cfg, const torch::Device& device);

// Collectives that give every rank rank 0's choice: its library, and its pick among `all`
// (sent as one flag per shape of `all`, which every rank computes alike).
model::kernels::GemmBackend rank0_backend(model::kernels::GemmBackend mine, dist::Communicator& comm);
std::vector<model::kernels::WeightShape> rank0_subset(const std::vector<model::kernels::WeightShape>& all,
                                                      const std::vector<model::kernels::WeightShape>& picked,
                                                      dist::Communicator& comm);

// train.gemm for training, on this process alone; auto measures only when `measure_here`.
// Does not set the backend.
GemmDecision decide_gemm_backend(const config::Config& cfg, const model::ModelConfig& model,
                                 const torch::Device& device, bool measure_here = true);

// Sets the backend for train.gemm on `device` (CPU only; on CUDA no CPU GEMM runs and MKL
// stays). auto: rank 0 times both on the model's shapes and broadcasts its pick. Collective
// under auto. Throws config::ConfigError for onednn where it cannot be loaded.
// `model`: the model's shapes (vocab_size from the manifest).
GemmDecision choose_gemm_backend(const config::Config& cfg, const model::ModelConfig& model, dist::Communicator& comm,
                                 const torch::Device& device);

// Under oneDNN, training's weight shapes whose forward runs faster on a transposed copy
// (model/kernels/gemm_plan.h): rank 0 times them at the micro-batch's row count and
// broadcasts; sets them and records them in `decision`. Collective. Nothing under MKL.
void choose_transposed_forward(const config::Config& cfg, const model::ModelConfig& model, dist::Communicator& comm,
                               GemmDecision& decision);

// Training's: choose_gemm_backend, then choose_transposed_forward. Collective.
GemmDecision choose_training_gemm(const config::Config& cfg, const model::ModelConfig& model, dist::Communicator& comm,
                                  const torch::Device& device);

// A resumed run computes what the uninterrupted run did: under auto it keeps the
// checkpoint's backend (`saved_backend`, absent in an older checkpoint),
// and under oneDNN the checkpoint's transposed-forward shapes (`saved_plan`, absent in older
// checkpoints). Sets what it keeps; returns the note for the log, empty when nothing changed.
// Throws std::runtime_error for a plan that does not parse.
std::string keep_checkpoint_gemm(const config::Config& cfg, std::optional<model::kernels::GemmBackend> saved_backend,
                                 const std::optional<std::string>& saved_plan, GemmDecision& decision);

// Whether the linear layers' products run in bf16: train.precision=bf16 on a CPU. Throws
// config::ConfigError there when the CPU (or the oneDNN library) cannot, naming why.
bool wants_cpu_bf16(const config::Config& cfg, const torch::Device& device);

// train.attention -> the attention kernel of this process (model/kernels/short_attention.h).
// Returns its name for the start line.
const char* choose_attention_kernel(const config::Config& cfg);

}  // namespace nmt::runtime
