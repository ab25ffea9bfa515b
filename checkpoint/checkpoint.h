#pragma once
// Checkpoints (docs/ARCHITECTURE.md, the checkpoint format): a generic dict written by
// pickle_save_untagged (checkpoint/torch_pickle.h), which Python's
// torch.load(weights_only=True) reads:
//   model      {parameter name -> tensor}
//   optimizer  {parameter name -> {exp_avg, exp_avg_sq, step}}
//   update, epoch, format_version (int), config (resolved YAML), vocab_sha256 (str),
//   planner    {epoch, cursor, slots_per_update}
//   rng        {cpu: [uint8 tensor per rank], cuda: [uint8 tensor per rank] (empty on CPU)}
//   best_valid_loss, best_bleu, loss_scale (float), bad_validations, loss_scale_good_steps (int),
//   metrics (JSON string of history)
//   gemm_backend (str: mkl | onednn, train.gemm's pick), gemm_transposed_forward (str: the
//   out x in shapes whose forward ran on a transposed copy, "" for none); both optional on load
// Written atomically (temporary file, fsync, rename, fsync of the directory) with a
// SHA-256 sidecar `<file>.sha256` that load verifies.
#include <torch/torch.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_error.h"
#include "model/kernels/gemm.h"

namespace nmt::checkpoint {

inline constexpr int64_t kCheckpointFormatVersion = 1;

struct Checkpoint {
  c10::Dict<std::string, torch::Tensor> model;
  c10::Dict<std::string, c10::Dict<std::string, torch::Tensor>> optimizer;
  int64_t update = 0;
  int64_t epoch = 1;
  int64_t planner_epoch = 1, planner_cursor = 0, planner_slots = 1;
  std::string config_yaml;
  std::string vocab_sha256;
  std::vector<torch::Tensor> cpu_rng;    // uint8 generator state, index = rank
  std::vector<torch::Tensor> cuda_rng;   // uint8 state of each rank's CUDA generator (empty on CPU)
  double best_valid_loss = 1e30;
  double best_bleu = -1;
  double loss_scale = 65536.0;         // fp16 dynamic loss scale
  int64_t loss_scale_good_steps = 0;
  int64_t bad_validations = 0;
  std::string metrics_json = "[]";
  // train.gemm's pick, stored as "mkl" | "onednn" and parsed on load (any other text is
  // refused); absent in older checkpoints.
  std::optional<model::kernels::GemmBackend> gemm_backend;
  // Under oneDNN, the weight shapes whose forward ran on a transposed copy ("256x1024,256x256",
  // model/kernels/gemm_plan.h); absent in older checkpoints.
  std::optional<std::string> gemm_transposed_forward;
};

// Atomic (base/atomic_file.h), verified write. Throws base::FileError naming the file it
// cannot write. `before_rename` runs after the temporary file is complete and synced,
// before it replaces `path` (tests inject a crash there).
void save_checkpoint(const Checkpoint& ckpt, const std::string& path,
                     const std::function<void()>& before_rename = nullptr);
// Verifies the sidecar checksum (when present) and every field. Throws CheckpointError
// naming the path and the field.
Checkpoint load_checkpoint(const std::string& path);

// Copies `weights` into `module`'s parameters; every name must match with the same shape.
// Throws CheckpointError naming the parameter (`path` for the message).
void load_model_weights(torch::nn::Module& module, const c10::Dict<std::string, torch::Tensor>& weights,
                        const std::string& path);
c10::Dict<std::string, torch::Tensor> model_weights(const torch::nn::Module& module);

}  // namespace nmt::checkpoint
