#pragma once
// The training loop. One update (train_step) reads top to bottom: plan -> all-reduce the
// token count -> forward/backward each micro-batch -> reduce gradients -> check, clip,
// step. Everything else (validation, checkpoints, logging) sits around it in run().
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "checkpoint/checkpoint.h"
#include "config/config.h"
#include "data/batch.h"
#include "data/batch_planner.h"
#include "data/sharded_corpus.h"
#include "dist/communicator.h"
#include "dist/grad_reducer.h"
#include "dist/process_group.h"
#include "metrics/train_log.h"
#include "model/transformer.h"
#include "base/stop_signal.h"
#include "metrics/log_window.h"
#include "optim/adam.h"
#include "optim/loss_scaler.h"
#include "optim/lr_schedule.h"
#include "runtime/bf16_speed_check.h"
#include "runtime/gemm_choice.h"
#include "runtime/run_lock.h"

namespace nmt::trainer {

// A numerical failure (NaN/Inf) or an injected fault, naming the update.
class TrainingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Greedy-decodes the validation split (all ranks take part) and returns its BLEU, one
// (direction, BLEU) per direction of a multilingual model ("" for a bilingual one); given by
// the caller, so that trainer/ needs no decoding code (eval/ sits on top of it).
using BleuValidator =
    std::function<std::vector<std::pair<std::string, double>>(model::Transformer model, dist::Communicator& comm)>;

class Trainer {
 public:
  Trainer(const config::Config& cfg, const dist::ProcessGroup& group, BleuValidator bleu = nullptr);
  ~Trainer();

  // Trains until max_updates / max_epochs / max_minutes / patience says stop.
  // `resume`: "" (fresh), a checkpoint path, or "auto" (newest valid one in save_dir).
  void run(const std::string& resume);

  // `train --benchmark N`: `warmup` untimed updates, then N timed ones; returns the
  // figures as one JSON object (bench/README.md). Writes no checkpoints.
  // With `out_dir`, also writes init.pt and plan.json there (bench/pytorch_reference.py).
  // With `profile_path`, the timed updates are recorded by the profiler (runtime/profiler.h)
  // and its trace written there (rank r > 0: "<profile_path>.rank<r>").
  nlohmann::json benchmark(int64_t warmup, int64_t updates, const std::string& out_dir = "",
                           const std::string& profile_path = "");

  model::Transformer& model() { return model_; }
  int64_t update() const { return update_; }

 private:
  // Seconds spent in each phase of one update, on this rank.
  struct StepTimes {
    double data = 0, forward = 0, backward = 0, reduce = 0, optimizer = 0;
    StepTimes& operator+=(const StepTimes& o);
    double total() const { return data + forward + backward + reduce + optimizer; }
  };
  struct StepResult {
    double loss = 0, nll = 0;  // sums over the update's target tokens, all ranks
    int64_t tokens = 0;        // target tokens, all ranks
    double lr = 0;
    double grad_norm = 0;      // L2 norm of the reduced gradient before clipping
    bool skipped = false;      // non-finite loss or gradient (skip policy or fp16 overflow)
    StepTimes times;
    int64_t local_src_tokens = 0, local_tgt_tokens = 0, local_padded = 0;  // this rank's batches
    double local_flops = 0;    // model FLOPs of this rank's batches (metrics/flops.h)
    torch::Tensor local_loss, local_nll;  // float64 sums over this rank's batches, before the all-reduce
  };
  class Laps;
  struct Validation {
    // Per target token: the one direction's, or a multilingual model's selected direction's
    // (train.select_direction), or the mean over its directions.
    double loss = 0, nll = 0;
    struct Direction {
      std::string name;
      double loss = 0, nll = 0;
    };
    std::vector<Direction> directions;  // a multilingual model's, in data.directions' order
  };
  // The value early stopping and the best checkpoint follow among per-direction `values`:
  // train.select_direction's, or their mean.
  double selected(const std::vector<std::pair<std::string, double>>& values) const;

  StepResult train_step(const std::vector<data::MicroBatch>& mine);
  // The steps of train_step, in order.
  std::vector<data::Batch> load_micro_batches(const std::vector<data::MicroBatch>& mine, StepResult& r);
  int64_t count_update_tokens(const std::vector<data::Batch>& batches);  // all ranks' target tokens
  void forward_backward(const std::vector<data::Batch>& batches, StepResult& r, Laps& laps);
  void define_missing_gradients();
  // Per parameter, in model_->parameters() order: true where LayerDrop skipped its layer on
  // every rank, so Adam leaves it untouched. Empty without LayerDrop.
  std::vector<bool> parameters_no_rank_reached(const torch::Tensor& grad_norms) const;
  void sum_losses_over_ranks(StepResult& r);
  // fp16: unscales the gradients, or skips an overflowed update; fp32/bf16: applies
  // train.nonfinite. True when the update was skipped (and counted).
  bool skip_nonfinite_update(StepResult& r, std::vector<torch::Tensor>& grads, double& norm, Laps& laps);
  void clip_gradients(std::vector<torch::Tensor>& grads, double norm);
  Validation validate();
  // Throws (stop policy) or reports skipping (skip policy) a non-finite update.
  bool handle_nonfinite(const std::string& what);
  std::string nonfinite_parameter() const;
  void start_from(const std::string& finetune_path);
  void start_from_hf(const std::string& dir);  // train.finetune_from: a transformers model directory
  // dist.check_params_interval: throws if any rank's parameters differ from rank 0's.
  void check_params_agree();
  // last.pt always; update_<N>.pt on the save interval, and after a validation (`validated`)
  // under keep_best, pruned to keep_last plus keep_best's; best.pt if `best`.
  void save(bool best, bool best_bleu, bool validated = false);
  void prune_numbered_checkpoints() const;
  void validate_and_save(const char* label, double wall_s);
  // `preloaded`, when given, is the checkpoint already read from `path` (resume auto on rank 0).
  void restore(const std::string& path, std::optional<checkpoint::Checkpoint> preloaded = std::nullopt);
  void restore_from(const checkpoint::Checkpoint& c, const std::string& path);
  void load_optimizer_state(const checkpoint::Checkpoint& c, const std::string& path);
  // A decaying schedule resumed with another end (train.max_updates or schedule.total_updates
  // changed) would jump along its curve: refused, naming the end that keeps it.
  void check_schedule_end_unchanged(const checkpoint::Checkpoint& c, const std::string& path) const;
  // The newest checkpoint in train.save_dir that loads, with its contents (read once), or
  // nullopt if there is none; throws if checkpoints exist but none loads.
  std::optional<std::pair<std::string, checkpoint::Checkpoint>> find_resume_checkpoint();
  checkpoint::Checkpoint make_checkpoint();  // collective: gathers every rank's RNG state
  void write_benchmark_reference(const std::string& out_dir, int64_t total_updates);  // train --bench-out
  bool should_stop(int64_t epoch) const;
  // The steps of run(), in order.
  bool resume_or_start(const std::string& resume);
  void check_sentences_fit() const;
  void pack_validation_batches();
  void check_bleu_references() const;
  void preload_shards();  // data.preload_mb; sets shards_where_
  void choose_cpu_precision(const model::ModelConfig& model_cfg);
  std::string gemm_text() const;
  void check_ranks_agree_on_start();  // same position everywhere, then rank 0's parameters
  void announce_start(bool resumed);
  struct StopVote {
    bool out_of_time = false;  // train.max_minutes, by rank 0's clock
    bool signalled = false;    // some rank received a stop signal: every rank stops now
    int own_signal = 0;        // the signal this rank received itself (0: it stops with the others)
  };
  StopVote vote_to_stop(const base::StopSignal& signals, double elapsed_s);
  void log_window(const metrics::LogWindow::Summary& w, int64_t first_update, double elapsed_s);
  void count_corpus_tokens();
  void validate_or_save_on_interval(double elapsed_s);
  void stop_after_signal(int own_signal, int64_t first_update);

  config::Config cfg_;
  const dist::ProcessGroup& group_;
  runtime::RunLock run_lock_;  // before anything below writes into save_dir
  torch::Device device_;
  std::unique_ptr<dist::Communicator> comm_;
  std::unique_ptr<data::ShardedCorpus> train_, valid_;
  std::vector<data::MicroBatch> valid_batches_;  // packed once per validation split, checked at start
  std::vector<int64_t> valid_batch_split_;       // the validation split of each (index into valid_->splits())
  std::string shards_where_;  // the start line's words on where the shards are read from
  data::SpecialIds special_;
  model::Transformer model_{nullptr};
  runtime::GemmDecision gemm_;  // train.gemm as decided at start (or kept from the resumed checkpoint)
  runtime::Bf16SpeedCheck bf16_speed_;  // train.precision=bf16 on a CPU, rank 0: bf16 against fp32's products
  std::unique_ptr<optim::Adam> optim_;
  std::unique_ptr<dist::GradReducer> reducer_;
  std::unique_ptr<data::BatchPlanner> planner_;
  std::vector<int64_t> corpus_tokens_;  // data.train_corpora: target tokens per corpus in the log window
  optim::LrSchedule schedule_;
  metrics::TrainLog log_;
  int64_t update_ = 0;
  int64_t epoch_ = 1;
  double best_valid_loss_ = 1e30;
  int64_t bad_validations_ = 0;
  double best_bleu_ = -1;
  int64_t consecutive_skips_ = 0, skipped_total_ = 0;
  BleuValidator bleu_;
  optim::LossScaler scaler_;
  nlohmann::json history_ = nlohmann::json::array();
};

}  // namespace nmt::trainer
