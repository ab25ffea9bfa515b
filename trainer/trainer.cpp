// The training loop: construction (checks, model, optimizer, reducer, planner), one
// update (train_step), the guards on non-finite updates, and run(), which sequences
// updates, logging, validation and checkpoints. Validation is in validation.cpp, the
// run's state (checkpoints, resume, fine-tuning) in run_state.cpp, the benchmark in
// benchmark.cpp.
#include "trainer/trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "base/atomic_file.h"
#include "base/elapsed.h"
#include "base/progress.h"
#include "base/stop_signal.h"
#include "model/kernels/bf16_gemm.h"
#include "model/kernels/linear.h"
#include "checkpoint/model_setup.h"
#include "config/config_error.h"
#include "data/text_file.h"
#include "metrics/flops.h"
#include "optim/loss.h"
#include "runtime/cuda_math.h"
#include "runtime/device.h"
#include "runtime/memory_estimate.h"
#include "runtime/shared_paths.h"
#include "trainer/autocast.h"

namespace nmt::trainer {
namespace {

std::vector<std::pair<std::string, torch::Tensor>> named_params(torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

}  // namespace

Trainer::Trainer(const config::Config& cfg, const dist::ProcessGroup& group, BleuValidator bleu)
    : cfg_(cfg), group_(group), run_lock_(cfg.train.save_dir, group.is_main()),
      device_(runtime::choose_device(cfg.train, group.local_rank())),
      schedule_(cfg.schedule, cfg.model.d_model, cfg.train.max_updates), log_(cfg.train.save_dir, group.is_main()), bleu_(std::move(bleu)) {
  torch::set_num_threads(static_cast<int>(cfg_.train.threads));
  runtime::configure_cuda_math(cfg_, device_);
  // Under the run lock no other writer exists: every temporary in save_dir is litter of an
  // interrupted run (a checkpoint write cut by SIGKILL, say).
  if (group_.is_main())
    for (const std::string& old : base::remove_stale_temporaries(cfg_.train.save_dir, /*all=*/true))
      log_.info("removed " + old + ", left by an interrupted run");
  comm_ = dist::make_communicator(cfg_.dist, group_, device_);
  runtime::check_every_rank_sees_the_run(cfg_, *comm_);  // before any rank reads shards: one message names the host
  // Directions and languages first: a bilingual config on multilingual shards is told so, not
  // that split 'train' is missing.
  checkpoint::check_config_against_manifest(cfg_, data::Manifest::load(cfg_.data.shard_dir));
  std::vector<std::string> corpus_names;
  for (const auto& [name, weight] : data::training_shard_splits(cfg_.data)) corpus_names.push_back(name);
  train_ = std::make_unique<data::ShardedCorpus>(cfg_.data.shard_dir, corpus_names);
  valid_ = std::make_unique<data::ShardedCorpus>(cfg_.data.shard_dir, data::validation_splits(cfg_.data));
  special_ = train_->manifest().special;
  check_sentences_fit();
  pack_validation_batches();
  if (bleu_) check_bleu_references();

  // Same seed on every rank: identical initial parameters (rank 0's are broadcast anyway).
  torch::manual_seed(static_cast<uint64_t>(cfg_.train.seed));
  const model::ModelConfig model_cfg = checkpoint::model_config_for(cfg_, train_->manifest());
  runtime::check_fits(model_cfg, cfg_, device_, /*training=*/true);  // before allocating anything large
  model_ = model::Transformer(model_cfg);
  // train.gemm and, under oneDNN, the transposed-forward shapes (collective where measured).
  // Timing draws from a generator of its own, so the seeded stream that made the parameters
  // and makes dropout is untouched.
  gemm_ = runtime::choose_training_gemm(cfg_, model_cfg, *comm_, device_);
  choose_cpu_precision(model_cfg);
  runtime::choose_attention_kernel(cfg_);
  model_->to(device_);
  model_->train();
  optim_ = std::make_unique<optim::Adam>(named_params(*model_), cfg_.optim);
  reducer_ = std::make_unique<dist::GradReducer>(model_->parameters(), *comm_, cfg_.dist.bucket_mb,
                                                  cfg_.dist.overlap, cfg_.dist.deterministic_reduce,
                                                  dist::wire_dtype(cfg_.dist.grad_dtype));
  std::vector<data::CorpusSpan> spans;
  const auto corpora = data::training_shard_splits(cfg_.data);
  for (size_t k = 0; k < corpora.size(); ++k)
    spans.push_back({train_->split_begin()[k], train_->split_begin()[k + 1], corpora[k].second,
                     data::weight_after_reversed_stage(cfg_.data, corpora[k].first, corpora[k].second)});
  data::apply_sampling_temperature(spans, cfg_.data.sampling_temperature);
  planner_ = std::make_unique<data::BatchPlanner>(
      train_->src_lengths(), train_->tgt_lengths(),
      data::PlanOptions{cfg_.data.max_tokens, static_cast<uint64_t>(cfg_.train.seed), group_.world_size(),
                        cfg_.train.update_freq, cfg_.data.reversed_until_update},
      spans);
  // Dropout differs per rank (different data deserve different masks), yet is reproducible.
  torch::manual_seed(static_cast<uint64_t>(cfg_.train.seed) * 1000003ull + static_cast<uint64_t>(group_.rank()));
  if (cfg_.debug.anomaly) torch::autograd::AnomalyMode::set_enabled(true);
  preload_shards();  // last: after every check that may refuse the run
}

Trainer::~Trainer() = default;

// train.validate_bleu: each direction's validation reference must be there (refused now, not at
// the first validation).
void Trainer::check_bleu_references() const {
  std::vector<std::string> target_langs{cfg_.data.tgt_lang};
  if (!cfg_.data.directions.empty()) target_langs.clear();
  for (const data::Direction& d : cfg_.data.directions) target_langs.push_back(d.tgt);
  for (const std::string& lang : target_langs)
    if (data::find_split_file(cfg_.data.raw_dir, cfg_.data.valid_split, lang).empty())
      throw config::ConfigError("config key 'train.validate_bleu' = true: no reference " + cfg_.data.valid_split + "." +
                                lang + "[.gz] in data.raw_dir = '" + cfg_.data.raw_dir + "'");
}

// Each validation split packed on its own, so that a micro-batch holds one direction and its
// scores can be told apart.
void Trainer::pack_validation_batches() {
  const auto& begin = valid_->split_begin();
  for (size_t k = 0; k + 1 < begin.size(); ++k) {
    const std::vector<int32_t> src(valid_->src_lengths().begin() + begin[k], valid_->src_lengths().begin() + begin[k + 1]);
    const std::vector<int32_t> tgt(valid_->tgt_lengths().begin() + begin[k], valid_->tgt_lengths().begin() + begin[k + 1]);
    for (data::MicroBatch b : data::pack_micro_batches(src, tgt, cfg_.data.max_tokens)) {
      for (int32_t& i : b) i += static_cast<int32_t>(begin[k]);
      valid_batches_.push_back(std::move(b));
      valid_batch_split_.push_back(static_cast<int64_t>(k));
    }
  }
}

Trainer::StepTimes& Trainer::StepTimes::operator+=(const StepTimes& o) {
  data += o.data;
  forward += o.forward;
  backward += o.backward;
  reduce += o.reduce;
  optimizer += o.optimizer;
  return *this;
}

// A stopwatch that charges the time since its last lap to one phase of the update.
class Trainer::Laps {
 public:
  void to(double& phase) {
    const auto now = std::chrono::steady_clock::now();
    phase += std::chrono::duration<double>(now - mark_).count();
    mark_ = now;
  }

 private:
  std::chrono::steady_clock::time_point mark_ = std::chrono::steady_clock::now();
};

// One update, as the steps read: load this rank's micro-batches, learn the update's
// target-token count from every rank, forward and backward each micro-batch (the
// gradient all-reduce starts during the last backward), finish the reduction, then check,
// clip and step.
Trainer::StepResult Trainer::train_step(const std::vector<data::MicroBatch>& mine) {
  comm_->set_phase(fmt::format("update {}", update_ + 1));
  StepResult r;
  Laps laps;
  const std::vector<data::Batch> batches = load_micro_batches(mine, r);
  laps.to(r.times.data);
  r.tokens = count_update_tokens(batches);
  laps.to(r.times.reduce);
  forward_backward(batches, r, laps);
  define_missing_gradients();
  reducer_->finish();
  sum_losses_over_ranks(r);
  laps.to(r.times.reduce);
  std::vector<torch::Tensor> grads;
  for (auto& p : model_->parameters()) grads.push_back(p.grad());
  // Every rank holds the same reduced gradients and loss, so all reach the same verdict.
  const torch::Tensor grad_norms = torch::stack(torch::_foreach_norm(grads));
  double norm = torch::linalg_vector_norm(grad_norms, 2).item<double>();
  if (skip_nonfinite_update(r, grads, norm, laps)) return r;
  r.grad_norm = norm;  // before clipping, after fp16 unscaling: what the metrics report
  clip_gradients(grads, norm);
  r.lr = schedule_.lr(update_ + 1);
  optim_->step(r.lr, parameters_no_rank_reached(grad_norms));
  optim_->zero_grad();
  ++update_;
  laps.to(r.times.optimizer);
  return r;
}

std::vector<data::Batch> Trainer::load_micro_batches(const std::vector<data::MicroBatch>& mine, StepResult& r) {
  std::vector<data::Batch> batches;
  for (const auto& mb : mine) {
    batches.push_back(data::make_batch(*train_, mb, special_));
    if (cfg_.optim.rdrop_alpha > 0) batches.back() = data::with_second_copy(batches.back());
    const data::Batch& b = batches.back();
    if (b.empty()) continue;
    r.local_src_tokens += b.src_tokens;
    r.local_tgt_tokens += b.tgt_tokens;
    r.local_padded += b.src.numel() + b.tgt_out.numel();
    r.local_flops += metrics::training_flops(
        model_->config(), {b.src.size(0), b.src.size(1), b.tgt_out.size(1), b.src_tokens, b.tgt_tokens});
  }
  return batches;
}

int64_t Trainer::count_update_tokens(const std::vector<data::Batch>& batches) {
  // The update's gradient is the sum over all micro-batches of all ranks divided by their
  // total target tokens, known before the first backward (docs/ARCHITECTURE.md, "Contracts": loss normalization).
  int64_t local_tokens = 0;
  for (const data::Batch& b : batches) local_tokens += b.tgt_tokens;
  return static_cast<int64_t>(comm_->all_reduce_sum(static_cast<double>(local_tokens)));
}

void Trainer::forward_backward(const std::vector<data::Batch>& batches, StepResult& r, Laps& laps) {
  const double loss_scale = cfg_.train.precision == config::Precision::kFp16 ? scaler_.scale() : 1.0;
  r.local_loss = torch::zeros({}, torch::kFloat64);
  r.local_nll = torch::zeros({}, torch::kFloat64);
  for (size_t k = 0; k < batches.size(); ++k) {
    const bool last = k + 1 == batches.size();
    if (last) reducer_->arm();  // all-reduce only after the final micro-batch's backward
    const data::Batch& b = batches[k];
    if (b.empty()) continue;
    optim::LossSums l;
    {
      AutocastScope autocast(device_, cfg_.train.precision);
      // The tied matrix as the model uses it, once for the inputs and the projection alike.
      const torch::Tensor vectors = model_->word_vectors();
      torch::Tensor hidden = model_->forward_hidden(b.src.to(device_), b.tgt_in.to(device_), vectors);
      const auto project = [&](const torch::Tensor& h) { return model_->project(h, vectors); };
      l = cfg_.optim.rdrop_alpha > 0
              ? optim::rdrop_label_smoothed_loss(hidden, b.tgt_out.to(device_), special_.pad,
                                                 cfg_.optim.label_smoothing, cfg_.optim.rdrop_alpha, project)
              : optim::label_smoothed_loss(hidden, b.tgt_out.to(device_), special_.pad, cfg_.optim.label_smoothing,
                                           project);
    }
    if (cfg_.debug.nan_update > 0 && update_ + 1 >= cfg_.debug.nan_update &&
        update_ + 1 < cfg_.debug.nan_update + cfg_.debug.nan_count)
      l.loss = l.loss * std::numeric_limits<double>::quiet_NaN();  // fault injection (debug.nan_update)
    laps.to(r.times.forward);
    double backward_scale = loss_scale / static_cast<double>(r.tokens);
    if (cfg_.debug.fp16_overflow_above > 0 && loss_scale > cfg_.debug.fp16_overflow_above)
      backward_scale = std::numeric_limits<double>::infinity();  // fault injection: the gradients overflow
    (l.loss * backward_scale).backward();
    r.local_loss += l.loss.detach().to(torch::kCPU, torch::kFloat64);
    r.local_nll += l.nll.to(torch::kCPU, torch::kFloat64);
    laps.to(r.times.backward);
  }
}

void Trainer::define_missing_gradients() {
  // zero_grad() released them; a parameter no backward reached (a layer LayerDrop skipped, a
  // rank whose micro-batches were all empty) gets zeros, which Adam and the all-reduce need.
  for (auto& p : model_->parameters())
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
}

std::vector<bool> Trainer::parameters_no_rank_reached(const torch::Tensor& grad_norms) const {
  // Under LayerDrop, a parameter whose all-reduced gradient is exactly zero belongs to a layer
  // that every rank skipped in every micro-batch (define_missing_gradients gave it zeros): Adam
  // must leave it alone. Without LayerDrop the list is empty: every parameter is stepped, even
  // one whose gradient is exactly zero (as plain Adam does).
  const model::ModelConfig& c = model_->config();
  if (c.encoder_layerdrop <= 0 && c.decoder_layerdrop <= 0) return {};
  const torch::Tensor zero = grad_norms.eq(0).to(torch::kCPU).contiguous();
  const bool* flags = zero.data_ptr<bool>();
  return std::vector<bool>(flags, flags + zero.numel());
}

void Trainer::sum_losses_over_ranks(StepResult& r) {
  // One all-reduce for both sums.
  const std::vector<double> sums =
      comm_->all_reduce_sum(std::vector<double>{r.local_loss.item<double>(), r.local_nll.item<double>()});
  r.loss = sums[0];
  r.nll = sums[1];
}

bool Trainer::skip_nonfinite_update(StepResult& r, std::vector<torch::Tensor>& grads, double& norm, Laps& laps) {
  const bool fp16 = cfg_.train.precision == config::Precision::kFp16;
  if (std::isfinite(r.loss) && std::isfinite(norm)) {
    if (fp16) {
      const double used_scale = scaler_.scale();  // clean_step may double it for the next update
      scaler_.clean_step();
      torch::NoGradGuard no_grad;
      torch::_foreach_mul_(grads, 1.0 / used_scale);
      norm /= used_scale;
    }
    consecutive_skips_ = 0;
    return false;
  }
  // Under fp16 a finite loss with a non-finite gradient is an overflow of the scaled
  // gradients, expected now and then: skip, lower the scale, go on. A non-finite loss, or
  // an overflow at the scale's floor, is a real non-finite value: train.nonfinite decides.
  if (fp16 && std::isfinite(r.loss) && scaler_.lower_after_overflow()) {
    log_.info(fmt::format("update {}: fp16 gradient overflow, update skipped, loss scale now {}", update_ + 1,
                          scaler_.scale()));
    r.skipped = true;
  } else {
    std::string what = !std::isfinite(r.loss)
                           ? fmt::format("the loss is {}", r.loss)
                           : fmt::format("non-finite gradient in parameter '{}'", nonfinite_parameter());
    if (fp16 && std::isfinite(r.loss))
      what += fmt::format(" at the fp16 loss scale's floor {}", optim::LossScaler::kMinScale);
    r.skipped = handle_nonfinite(what);
  }
  optim_->zero_grad();
  ++update_;
  laps.to(r.times.optimizer);
  return true;
}

void Trainer::clip_gradients(std::vector<torch::Tensor>& grads, double norm) {
  if (cfg_.optim.clip_norm > 0 && norm > cfg_.optim.clip_norm) {
    torch::NoGradGuard no_grad;
    torch::_foreach_mul_(grads, cfg_.optim.clip_norm / (norm + 1e-6));
  }
}

std::string Trainer::nonfinite_parameter() const {
  for (const auto& p : model_->named_parameters())
    if (!torch::isfinite(p.value().grad()).all().item<bool>()) return p.key();
  return "?";
}

bool Trainer::handle_nonfinite(const std::string& what) {
  const std::string msg = fmt::format("update {}: {}", update_ + 1, what);
  if (cfg_.train.nonfinite == config::NonfinitePolicy::kStop)
    throw TrainingError(msg + " (train.nonfinite=stop; debug.anomaly=true finds the op that produced it)");
  ++consecutive_skips_;
  ++skipped_total_;
  log_.info(fmt::format("{}: update skipped ({} in a row, {} in total)", msg, consecutive_skips_, skipped_total_));
  log_.metrics({{"event", "skipped"}, {"update", update_ + 1}, {"reason", what}, {"in_a_row", consecutive_skips_}});
  if (consecutive_skips_ >= cfg_.train.max_nonfinite_skips)
    throw TrainingError(fmt::format("{}: {} non-finite updates in a row (train.max_nonfinite_skips)", msg,
                                    consecutive_skips_));
  return true;
}

bool Trainer::should_stop(int64_t epoch) const {
  if (cfg_.train.max_updates > 0 && update_ >= cfg_.train.max_updates) return true;
  if (cfg_.train.max_epochs > 0 && epoch > cfg_.train.max_epochs) return true;
  if (cfg_.train.patience > 0 && bad_validations_ >= cfg_.train.patience) return true;
  return false;
}

// Rank 0 (which writes checkpoints) decides which checkpoint every rank resumes from; a
// rank that cannot read it fails, and the job with it. True when the run resumed.
bool Trainer::resume_or_start(const std::string& resume) {
  comm_->set_phase(resume.empty() ? "start" : "resume");
  std::string path = resume;
  std::optional<checkpoint::Checkpoint> preloaded;  // rank 0 of resume auto has read it already
  if (resume == "auto") {
    path.clear();
    if (group_.is_main())
      if (auto found = find_resume_checkpoint()) {
        path = found->first;
        preloaded = std::move(found->second);
      }
    path = comm_->all_gather_bytes(path)[0];
    if (path.empty()) log_.info("resume auto: no checkpoint in " + cfg_.train.save_dir + ", starting fresh");
  }
  if (!path.empty()) restore(path, std::move(preloaded));
  else if (!cfg_.train.finetune_from.empty()) start_from(cfg_.train.finetune_from);
  return !path.empty();
}

void Trainer::check_ranks_agree_on_start() {
  const auto st = planner_->state();
  const std::string position = fmt::format("{} {} {}", update_, st.epoch, st.cursor);
  for (const auto& other : comm_->all_gather_bytes(position))
    if (other != position)
      throw TrainingError("ranks start from different positions (update epoch cursor: " + position + " vs " + other + ")");
  // Rank 0's parameters are everyone's (at start and after resume).
  torch::NoGradGuard no_grad;
  for (auto& p : model_->parameters()) comm_->broadcast(p, 0);
}

void Trainer::announce_start(bool resumed) {
  // Marks where this process's records begin: after a crash, an earlier process's records
  // from this update on were rolled back with the checkpoint (TensorBoard drops them too).
  log_.metrics({{"event", "start"}, {"update", update_ + 1}, {"resumed", resumed}});
  if (cfg_.train.tensorboard) log_.start_tensorboard(update_ + 1);
  log_.info(fmt::format("model: {} parameters | device {} | ranks {} | backend {} | {} updates/epoch | threads {} | gemm {} | attention {}",
                        model::parameter_count(*model_), runtime::describe_device(device_), group_.world_size(), comm_->name(),
                        planner_->updates_per_epoch(), cfg_.train.threads, gemm_text(),
                        model::kernels::attention_kernel_name(model::kernels::attention_kernel())));
  if (!bf16_speed_.warning.empty()) log_.info(bf16_speed_.warning);
  const auto& spans = planner_->corpora();
  std::string mixture;
  double total_weight = 0;
  for (const auto& span : spans) total_weight += span.weight;
  for (size_t k = 0; k < spans.size(); ++k)
    mixture += fmt::format("{}{} ({} pairs, weight {}: {:.1f}% of micro-batches)", k ? ", " : "", train_->splits()[k],
                           spans[k].end - spans[k].begin, spans[k].weight, 100 * spans[k].weight / total_weight);
  if (!mixture.empty() && cfg_.data.reversed_until_update > 0)
    mixture += fmt::format("; from update {} on, the reversed splits' weight is 0", cfg_.data.reversed_until_update + 1);
  if (!mixture.empty()) log_.info("training corpora: " + mixture);
  log_.info(shards_where_);
}

// data.preload_mb: training and validation shards that fit it together are read whole now, and
// batches are copied from memory; larger ones are read per example (data/sharded_corpus.h).
// The start line (announce_start) says which.
void Trainer::preload_shards() {
  const int64_t budget = cfg_.data.preload_mb << 20, wanted = train_->preload_bytes() + valid_->preload_bytes();
  const double mb = static_cast<double>(wanted) / (1 << 20);
  if (wanted <= budget && train_->preload_within(budget) + valid_->preload_within(budget) > 0)
    shards_where_ = fmt::format("shards in memory: {:.1f} MB (data.preload_mb = {})", mb, cfg_.data.preload_mb);
  else
    shards_where_ = fmt::format("shards read per example: {:.1f} MB is more than data.preload_mb = {}", mb,
                                cfg_.data.preload_mb);
}

// Inputs that would otherwise fail only at the first validation, or at a random update, are
// refused at start: before any training time is spent.
void Trainer::check_sentences_fit() const {
  for (const data::ShardedCorpus* c : {train_.get(), valid_.get()}) {
    int64_t longest = 0;
    for (int64_t i = 0; i < c->size(); ++i)
      longest = std::max<int64_t>(longest, std::max(c->src_lengths()[i], c->tgt_lengths()[i]) + 1);
    if (longest > cfg_.model.max_positions)
      throw config::ConfigError(fmt::format("config key 'model.max_positions' = {}: split '{}' has a sentence of {} positions "
                                    "(raise it, or lower data.max_len and preprocess again)",
                                    cfg_.model.max_positions, c->split(), longest));
    if (longest > cfg_.data.max_tokens)
      throw config::ConfigError(fmt::format("config key 'data.max_tokens' = {}: split '{}' has a sentence of {} tokens, "
                                            "which fits in no micro-batch (raise data.max_tokens to at least {})",
                                            cfg_.data.max_tokens, c->split(), longest, longest));
  }
}

// train.precision=bf16 on a CPU: the linear layers' products in bf16 (refused at start, naming
// the missing CPU flags, where the CPU has no bf16 instructions). Rank 0 times them against
// fp32's for the start line, and warns where bf16 is the slower (bf16_speed_check.h); the
// timing changes nothing computed, so the other ranks do not wait for it.
void Trainer::choose_cpu_precision(const model::ModelConfig& model_cfg) {
  namespace k = model::kernels;
  const bool bf16 = runtime::wants_cpu_bf16(cfg_, device_);
  k::set_linear_precision(bf16 ? k::LinearPrecision::kBf16 : k::LinearPrecision::kFp32);
  if (bf16 && group_.is_main()) bf16_speed_ = runtime::check_training_bf16_speed(cfg_, model_cfg);
}

// train.gemm's decision, and the bf16 products where they are on (also after a resume, which
// may replace the decision with the checkpoint's library).
std::string Trainer::gemm_text() const {
  namespace k = model::kernels;
  if (k::linear_precision() != k::LinearPrecision::kBf16) return gemm_.why;
  return gemm_.why + "; bf16 products (" + k::bf16_gemm_description() +
         (bf16_speed_.text.empty() ? "" : "; " + bf16_speed_.text) + ")";
}

// One all-reduce decides for every rank: rank 0's clock, and any rank's signal.
Trainer::StopVote Trainer::vote_to_stop(const base::StopSignal& signals, double elapsed_s) {
  const bool out_of_time =
      group_.is_main() && cfg_.train.max_minutes > 0 && elapsed_s / 60.0 >= cfg_.train.max_minutes;
  const std::vector<double> votes = comm_->all_reduce_sum(
      std::vector<double>{out_of_time ? 1.0 : 0.0, signals.received() ? 1.0 : 0.0});
  StopVote vote;
  vote.out_of_time = votes[0] > 0;
  // A forwarded signal reaches the ranks at different moments, so some ranks may stop
  // without having received it yet: they say so rather than name a signal they never got.
  vote.signalled = votes[1] > 0;
  vote.own_signal = signals.received();
  return vote;
}

void Trainer::log_window(const metrics::LogWindow::Summary& w, int64_t first_update, double elapsed_s) {
  const double eta =
      metrics::eta_seconds(cfg_.train.max_updates, cfg_.train.max_minutes, update_, first_update, elapsed_s);
  log_.info(fmt::format("update {:>6} | epoch {:>3} | loss {:.4f} | nll {:.4f} | ppl {:.2f} | lr {:.3e} | "
                        "{:.0f} tgt tok/s | elapsed {} | ETA {}",
                        update_, epoch_, w.loss, w.nll, std::exp(w.nll), w.lr, w.tokens_per_s,
                        base::format_duration(elapsed_s), base::format_duration(eta)));
  nlohmann::json rec = {{"event", "train"}, {"update", update_}, {"epoch", epoch_}, {"loss", w.loss},
                        {"nll", w.nll}, {"ppl", std::exp(w.nll)}, {"lr", w.lr}, {"grad_norm", w.grad_norm},
                        {"tgt_tokens_per_s", w.tokens_per_s}, {"updates", w.updates}, {"wall_s", elapsed_s}};
  if (cfg_.train.precision == config::Precision::kFp16) rec["loss_scale"] = scaler_.scale();
  if (!corpus_tokens_.empty()) {
    nlohmann::json by_corpus = nlohmann::json::object();
    for (size_t k = 0; k < corpus_tokens_.size(); ++k) by_corpus[train_->splits()[k]] = corpus_tokens_[k];
    rec["corpus_tgt_tokens"] = by_corpus;
    std::fill(corpus_tokens_.begin(), corpus_tokens_.end(), 0);
  }
  log_.metrics(rec);
}

// data.train_corpora: the target tokens (with EOS) each corpus gives the coming update, all
// ranks' slots counted from the plan on rank 0 (no communication), for the log window.
void Trainer::count_corpus_tokens() {
  if (planner_->corpora().size() < 2 || !group_.is_main()) return;
  corpus_tokens_.resize(planner_->corpora().size());
  const data::BatchPlanner::State st = planner_->state();
  for (const data::MicroBatch& b : planner_->update_slots(st.epoch, st.cursor))
    for (int64_t i : b) corpus_tokens_[static_cast<size_t>(planner_->corpus_of(i))] += train_->tgt_lengths()[i] + 1;
}

void Trainer::validate_or_save_on_interval(double elapsed_s) {
  if (update_ % cfg_.train.validate_interval_updates == 0) validate_and_save("validation", elapsed_s);
  else if (cfg_.train.save_interval_updates > 0 && update_ % cfg_.train.save_interval_updates == 0) save(false, false);
}

void Trainer::run(const std::string& resume) {
  const bool resumed = resume_or_start(resume);
  check_ranks_agree_on_start();
  announce_start(resumed);
  base::StopSignal signals;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t first_update = update_;
  metrics::LogWindow window;
  bool stopped_by_signal = false;
  int own_signal = 0;
  for (;;) {
    comm_->set_phase(fmt::format("update {} (start)", update_ + 1));
    epoch_ = planner_->state().epoch;
    const StopVote vote = vote_to_stop(signals, base::seconds_since(t0));
    if (vote.signalled) {
      comm_->set_phase(fmt::format("stop after update {}", update_));
      stopped_by_signal = true;
      own_signal = vote.own_signal;
      break;
    }
    if (should_stop(epoch_) || vote.out_of_time) break;
    if (cfg_.debug.fault_update == update_ + 1 && cfg_.debug.fault_rank == group_.rank())
      throw TrainingError(fmt::format("injected fault on rank {} at update {} (debug.fault_rank/fault_update)",
                                      group_.rank(), update_ + 1));

    count_corpus_tokens();
    const StepResult r = train_step(planner_->next(group_.rank()));
    if (!r.skipped) window.add(r.loss, r.nll, r.tokens, r.grad_norm, r.lr);
    if ((update_ % cfg_.train.log_interval == 0 || update_ == first_update + 1) && !window.empty())
      log_window(window.close(), first_update, base::seconds_since(t0));
    if (cfg_.dist.check_params_interval > 0 && update_ % cfg_.dist.check_params_interval == 0) check_params_agree();
    const auto pause = std::chrono::steady_clock::now();
    validate_or_save_on_interval(base::seconds_since(t0));
    window.exclude(std::chrono::steady_clock::now() - pause);
  }
  if (stopped_by_signal) return stop_after_signal(own_signal, first_update);
  // Final validation and checkpoint, unless the last update just had them.
  if (update_ > first_update && update_ % cfg_.train.validate_interval_updates != 0)
    validate_and_save("final validation", base::seconds_since(t0));
  log_.info(fmt::format("done: {} updates in {} ({} epochs started), best validation loss {:.4f}{}", update_,
                        base::format_duration(base::seconds_since(t0)), epoch_, best_valid_loss_,
                        skipped_total_ ? fmt::format(", {} updates skipped", skipped_total_) : std::string()));
}

// Preempted: checkpoint where every rank agreed to stop, and say how to continue.
void Trainer::stop_after_signal(int own_signal, int64_t first_update) {
  if (update_ > first_update) save(false, false);
  const std::string what = own_signal ? fmt::format("stopped by signal {} after update {}", own_signal, update_)
                                      : fmt::format("stopped after update {}: a stop signal reached another rank", update_);
  log_.info(fmt::format("{}; checkpoint {}/last.pt. Resume with: train --config <config> --resume auto", what,
                        cfg_.train.save_dir));
  if (!group_.is_main()) std::fprintf(stderr, "%s: %s\n", group_.label("train").c_str(), what.c_str());
}

}  // namespace nmt::trainer
