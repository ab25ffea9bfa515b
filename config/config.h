#pragma once
// The whole resolved configuration: one plain struct per component, composed here.
// config/ is the only place that reads YAML (config_loader.h).
#include <cstdint>
#include <map>
#include <string>

#include "data/data_config.h"
#include "dist/dist_config.h"
#include "model/model_config.h"

namespace nmt::config {

struct OptimConfig {
  double beta1 = 0.9;             // Adam beta1
  double beta2 = 0.98;            // Adam beta2
  double eps = 1e-9;              // Adam epsilon
  double weight_decay = 0.0;      // decoupled weight decay (AdamW style); 0 = plain Adam
  double clip_norm = 0.0;         // clip the global gradient norm to this (0 = no clipping)
  double label_smoothing = 0.1;   // epsilon of the label-smoothed cross-entropy
  // R-Drop (optim/loss.h): > 0 runs every micro-batch twice under independent dropout and adds
  // this weight times the two predictions' symmetric KL divergence; 0 = off (one copy).
  double rdrop_alpha = 0.0;
};

// The learning-rate schedule's shape (optim/lr_schedule.h has the formulas).
enum class ScheduleType { kNoam, kInverseSqrt, kConstant, kCosine, kLinear };

struct ScheduleConfig {
  ScheduleType type = ScheduleType::kNoam;  // noam|inverse_sqrt|constant|cosine|linear
  int64_t warmup_updates = 4000;  // linear warmup length in updates
  double factor = 1.0;            // noam: lr = factor * d_model^-0.5 * min(u^-0.5, u * warmup^-1.5)
  double lr = 5e-4;               // inverse_sqrt / constant: peak learning rate
  double warmup_init_lr = 0.0;    // inverse_sqrt, cosine, linear: learning rate at update 0
  // cosine / linear: after the warmup, decay from lr to min_lr at update total_updates
  // (0 = train.max_updates), so that a run's schedule ends where its budget ends.
  int64_t total_updates = 0;
  double min_lr = 0.0;            // cosine / linear: the learning rate at the schedule's end
};

// train.device: where training (and evaluation) runs.
enum class Device { kAuto, kCpu, kCuda };  // auto = CUDA when available
// train.precision: of forward and backward (master weights stay fp32). On a CPU bf16 means the
// linear layers' products in bf16 (model/kernels/linear.h); on a GPU, and fp16, LibTorch's autocast.
enum class Precision { kFp32, kBf16, kFp16 };
// train.nonfinite: what a NaN/Inf loss or gradient does.
enum class NonfinitePolicy { kStop, kSkip };
// train.gemm: the CPU GEMM library of the linear layers (model/kernels/gemm.h). auto times
// both at start (rank 0, broadcast) and keeps a resumed run on the checkpoint's choice.
enum class Gemm { kMkl, kOneDnn, kAuto };
// train.attention: the CPU attention kernel outside incremental decoding (model/kernels/
// short_attention.h): LibTorch's scaled_dot_product_attention, or ours for short sequences.
enum class Attention { kSdpa, kShort };

struct TrainConfig {
  int64_t seed = 1;               // seeds parameters, dropout and the batch order
  int64_t threads = 1;            // intra-op threads per rank
  int64_t max_updates = 0;        // stop after this many updates (0 = no limit)
  int64_t max_epochs = 0;         // stop after this many epochs (0 = no limit)
  double max_minutes = 0.0;       // stop after this much training wall-clock (0 = no limit)
  int64_t update_freq = 1;        // micro-batches accumulated per rank per update
  int64_t validate_interval_updates = 1000;  // validate every N updates (and at the end)
  int64_t save_interval_updates = 1000;      // write update_<N>.pt every N updates (0 = only last/best)
  int64_t keep_last = 5;          // keep this many update_<N>.pt checkpoints (0 = keep all)
  int64_t keep_best = 0;          // also keep the update_<N>.pt of the N validations with the lowest loss
                                  // (every validation then writes one), for `average --best N`
  int64_t log_interval = 10;      // log training metrics every N updates
  bool tensorboard = true;        // also write the metrics as TensorBoard event files in save_dir (rank 0)
  int64_t patience = 0;           // stop after N validations without improvement (0 = off)
  // A multilingual model's best checkpoint and early stopping follow the mean of its
  // directions' validation losses (and BLEU), or this one direction's ("de-en"); "" = the mean.
  // A resume that changes it is refused (the best so far was of the other measure).
  std::string select_direction = "";
  std::string save_dir = "runs/default";  // checkpoints, logs and metrics.jsonl go here
  Device device = Device::kAuto;  // auto|cpu|cuda
  Precision precision = Precision::kFp32;  // fp32|bf16|fp16
  Gemm gemm = Gemm::kMkl;         // mkl|onednn|auto: CPU GEMM of the linear layers (mkl: LibTorch's own;
                                  // decoding may multiply on kept transposed weights under either, gemm_plan.h)
  Attention attention = Attention::kShort;  // short|sdpa: CPU attention of training and scoring (sdpa: LibTorch's)
  bool tf32 = true;               // CUDA: fp32 matmuls and convolutions may use TF32 (runtime/cuda_math.h)
  bool cudnn_sdpa = false;        // CUDA: allow cuDNN's attention kernel (slow with varying batch shapes)
  bool validate_bleu = false;     // also greedy-decode the validation split at each validation (best_bleu.pt)
  NonfinitePolicy nonfinite = NonfinitePolicy::kStop;  // stop, or skip the update and count it
  int64_t max_nonfinite_skips = 5;  // skip policy: stop after this many skipped updates in a row
  std::string finetune_from = ""; // start from this checkpoint's weights, or a transformers model directory
                                  // (Marian / OPUS-MT or Pegasus layout); ignored when resuming
  bool reset_optimizer = true;    // fine-tuning: fresh Adam state (else the checkpoint's)
  bool reset_schedule = true;     // fine-tuning: update counter and learning-rate schedule from 0
  bool reset_planner = true;      // fine-tuning: data order from epoch 1 (else the checkpoint's position)
};

// eval.sampling: how translate and evaluate pick each next token when not by search.
// none: greedy or beam search (eval.beam); full: a draw from the model's whole distribution;
// topk: a draw from its eval.sampling_topk most probable tokens (eval/sampling.h).
enum class Sampling { kNone, kFull, kTopK };

struct EvalConfig {
  int64_t beam = 5;               // beam size (1 = greedy)
  double lenpen = 1.0;            // length penalty alpha: score / length^alpha
  double max_len_a = 1.2;         // hypotheses stop at max_len_a * src_len + max_len_b pieces
  int64_t max_len_b = 10;         // (see max_len_a)
  int64_t max_tokens = 4096;      // source tokens per decoding batch
  int64_t nbest = 1;              // translate: hypotheses printed per sentence
  int64_t average_last = 5;       // launch/quickstart.sh scores the average of the last N update_*.pt
  // Noisy-channel reranking (eval/channel.h): a model of the reverse direction (tgt -> src)
  // rescores the beam's hypotheses by log p(y|x) + channel_weight * log p(x|y); "" = off.
  std::string channel_checkpoint = "";
  double channel_weight = 0.25;   // noisy-channel reranking: W in log p(y|x) + W * log p(x|y)
  // Sampled decoding (back-translation with noise, Edunov et al. 2018): beam must be 1. Each
  // sentence's draws depend only on eval.seed and its line number in the input, never on the
  // batch, the threads or the ranks (eval/sampling.h).
  Sampling sampling = Sampling::kNone;  // none|full|topk
  int64_t sampling_topk = 10;     // topk: draw among this many most probable tokens
  double temperature = 1.0;       // sampling: the logits are divided by this (> 0)
  int64_t seed = 1;               // sampling: the draws' seed
  // A multilingual model decodes a direction it was not trained on (both languages seen, the
  // pair not: zero-shot) only when this is set; refused otherwise, naming the trained ones.
  bool zero_shot = false;
};

struct DebugConfig {
  bool anomaly = false;           // autograd anomaly detection (slow; finds the op that made a NaN)
  bool deterministic = false;     // CUDA: deterministic kernels only, so a run repeats bit for bit (runtime/cuda_math.h)
  int64_t fault_rank = -1;        // fault injection for tests: this rank throws ...
  int64_t fault_update = -1;      // ... at this update
  int64_t nan_update = -1;        // fault injection: the loss of this update becomes NaN
  int64_t nan_count = 1;          // ... and of this many updates in a row
  double fp16_overflow_above = 0;  // fault injection: fp16 gradients overflow while the loss scale is above this (0 = off)
  int64_t kill_in_save = -1;      // fault injection: SIGKILL while writing the checkpoint of this update
};

struct Config {
  data::DataConfig data;
  model::ModelConfig model;
  OptimConfig optim;
  ScheduleConfig schedule;
  TrainConfig train;
  dist::DistConfig dist;
  EvalConfig eval;
  DebugConfig debug;

  // Where each key got its value ("file.yaml:12", "command line 'a.b=v'"); defaults absent.
  std::map<std::string, std::string> origin;
};

}  // namespace nmt::config
