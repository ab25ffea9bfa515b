// The run's state, captured and restored: checkpoints (every rank's generator state
// gathered), keep_last, choosing the checkpoint to resume from, restoring it, and
// starting from another run's checkpoint (fine-tuning).
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <regex>

#include "checkpoint/best_validations.h"
#include "checkpoint/hf_import.h"
#include "checkpoint/model_setup.h"
#include "config/config_error.h"
#include "config/config_loader.h"
#include "trainer/trainer.h"

namespace fs = std::filesystem;

namespace nmt::trainer {
namespace {

// <prefix>_<N>.pt files of a run directory (update_: periodic; valid_: a kept validation's),
// oldest first.
std::vector<std::pair<int64_t, fs::path>> numbered_checkpoints(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int64_t, fs::path>> out;
  if (!fs::is_directory(dir)) return out;
  const std::regex re(prefix + "_([0-9]+)\\.pt");
  for (const auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, re)) out.emplace_back(std::stoll(m[1]), e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

checkpoint::Checkpoint Trainer::make_checkpoint() {
  comm_->set_phase(fmt::format("checkpoint at update {}", update_));
  checkpoint::Checkpoint c;
  c.model = checkpoint::model_weights(*model_);
  c.optimizer = optim_->state_dict();
  c.update = update_;
  c.epoch = epoch_;
  const auto st = planner_->state();
  c.planner_epoch = st.epoch;
  c.planner_cursor = st.cursor;
  c.planner_slots = st.slots_per_update;
  c.config_yaml = config::to_yaml(cfg_);
  c.vocab_sha256 = train_->manifest().spm_sha256;
  // Every rank's generator state, so that dropout continues exactly on every rank.
  auto gather = [&](const torch::Tensor& state) {
    const std::string mine(static_cast<const char*>(state.data_ptr()), static_cast<size_t>(state.numel()));
    std::vector<torch::Tensor> all;
    for (const auto& bytes : comm_->all_gather_bytes(mine)) {
      torch::Tensor t = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
      std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
      all.push_back(t);
    }
    return all;
  };
  c.cpu_rng = gather(at::detail::getDefaultCPUGenerator().get_state());
  if (device_.is_cuda()) c.cuda_rng = gather(at::globalContext().defaultGenerator(device_).get_state());
  c.best_valid_loss = best_valid_loss_;
  c.best_bleu = best_bleu_;
  c.loss_scale = scaler_.scale();
  c.loss_scale_good_steps = scaler_.good_steps();
  c.bad_validations = bad_validations_;
  c.metrics_json = history_.dump();
  c.gemm_backend = gemm_.backend;
  c.gemm_transposed_forward = model::kernels::weight_shapes_text(gemm_.transposed_forward);
  return c;
}

void Trainer::save(bool best, bool best_bleu, bool validated) {
  const checkpoint::Checkpoint c = make_checkpoint();  // on every rank: it gathers RNG states
  if (!group_.is_main()) return;
  const fs::path dir(cfg_.train.save_dir);
  fs::create_directories(dir);
  std::function<void()> crash;
  if (cfg_.debug.kill_in_save == update_)
    crash = [] { std::raise(SIGKILL); };  // fault injection: die with a complete temporary file
  checkpoint::save_checkpoint(c, (dir / "last.pt").string(), crash);
  const bool on_interval = cfg_.train.save_interval_updates > 0 && update_ % cfg_.train.save_interval_updates == 0;
  // A validation off the save interval writes valid_<N>.pt, not update_<N>.pt: `average --last`
  // and keep_last see the periodic files only, so train.keep_best changes no last-N average (as
  // fairseq keeps its checkpoint.best_*.pt apart from checkpoint_E_U.pt).
  const bool keep_validation = validated && cfg_.train.keep_best > 0 && !on_interval;
  if (on_interval || keep_validation) {
    const std::string name = fmt::format("{}_{}.pt", on_interval ? "update" : "valid", update_);
    checkpoint::save_checkpoint(c, (dir / name).string());
    prune_numbered_checkpoints();
  }
  if (best) checkpoint::save_checkpoint(c, (dir / "best.pt").string());
  if (best_bleu) checkpoint::save_checkpoint(c, (dir / "best_bleu.pt").string());
}

// keep_last: remove the oldest periodic checkpoints beyond the newest N, sparing those of
// the keep_best validations with the lowest loss (validation records of history_); and remove
// each valid_<N>.pt whose validation is no longer among those.
void Trainer::prune_numbered_checkpoints() const {
  const std::vector<int64_t> best =
      cfg_.train.keep_best > 0
          ? checkpoint::best_validated_updates(history_.dump(), cfg_.train.keep_best, "this run's validations")
          : std::vector<int64_t>{};
  const auto is_best = [&](int64_t update) { return std::binary_search(best.begin(), best.end(), update); };
  const auto remove_with_sidecar = [](const fs::path& p) {
    fs::remove(p);
    fs::remove(p.string() + ".sha256");
  };
  for (const auto& [update, path] : numbered_checkpoints(cfg_.train.save_dir, "valid"))
    if (!is_best(update)) remove_with_sidecar(path);
  if (cfg_.train.keep_last == 0) return;
  const auto all = numbered_checkpoints(cfg_.train.save_dir, "update");
  for (size_t i = 0; i + cfg_.train.keep_last < all.size(); ++i)
    if (!is_best(all[i].first)) remove_with_sidecar(all[i].second);
}

std::optional<std::pair<std::string, checkpoint::Checkpoint>> Trainer::find_resume_checkpoint() {
  const fs::path dir(cfg_.train.save_dir);
  std::vector<fs::path> candidates = {dir / "last.pt"};
  auto periodic = numbered_checkpoints(dir, "update");
  for (auto it = periodic.rbegin(); it != periodic.rend(); ++it) candidates.push_back(it->second);
  std::string reasons;
  for (const auto& p : candidates) {
    if (!fs::exists(p)) continue;
    try {
      return std::make_pair(p.string(), checkpoint::load_checkpoint(p.string()));
    } catch (const checkpoint::CheckpointError& e) {
      log_.info(fmt::format("resume auto: skipping {}: {}", p.string(), e.what()));
      reasons += std::string("\n  ") + e.what();
    }
  }
  // Checkpoints exist but none loads: starting fresh would overwrite them. Refuse.
  if (!reasons.empty())
    throw checkpoint::CheckpointError(cfg_.train.save_dir + ": --resume auto found checkpoints but none is valid:" + reasons);
  return std::nullopt;
}

void Trainer::restore(const std::string& path, std::optional<checkpoint::Checkpoint> preloaded) {
  try {
    restore_from(preloaded ? *preloaded : checkpoint::load_checkpoint(path), path);
  } catch (const checkpoint::CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw checkpoint::CheckpointError(path + ": " + e.what());
  }
}

void Trainer::check_schedule_end_unchanged(const checkpoint::Checkpoint& c, const std::string& path) const {
  const int64_t now = config::schedule_end_update(cfg_);
  if (now == 0) return;
  int64_t then = 0;
  try {
    then = config::schedule_end_update(config::load_stored_config(c.config_yaml, path + " (its config)"));
  } catch (const config::ConfigError&) {
    return;  // written by a version with other keys: nothing to compare it with
  }
  if (then == now) return;
  throw config::ConfigError(
      // restore() names the checkpoint's path in front of this.
      then == 0 ? fmt::format("trained with a schedule that does not decay; this run's decays to update {} "
                              "(resuming would jump along it)", now)
                : fmt::format("its learning-rate schedule decays to update {}, this run's to update {} "
                              "(train.max_updates or schedule.total_updates changed): resuming would jump along "
                              "the curve; add schedule.total_updates={} to keep it",
                              then, now, then));
}

namespace {

// A checkpoint trained in another train.precision resumes (finishing a bf16 run in fp32, say),
// with a note: from here on the products round differently, so the run is neither precision's
// uninterrupted run.
std::string precision_change_note(const config::Config& now, const checkpoint::Checkpoint& c, const std::string& path) {
  config::Precision then{};
  try {
    then = config::load_stored_config(c.config_yaml, path + " (its config)").train.precision;
  } catch (const config::ConfigError&) {
    return "";  // written by a version with other keys: nothing to compare it with
  }
  if (then == now.train.precision) return "";
  const auto name = [](config::Precision p) {
    return p == config::Precision::kBf16 ? "bf16" : p == config::Precision::kFp16 ? "fp16" : "fp32";
  };
  return fmt::format("precision: the checkpoint was trained with train.precision={}, this run continues in {}",
                     name(then), name(now.train.precision));
}

// The best checkpoint, keep_best and patience compare one measure along a run: the mean of the
// directions' validation losses or train.select_direction's. A resume that changes it would
// compare the new measure with the best of the old, so it is refused.
void check_selection_unchanged(const config::Config& now, const checkpoint::Checkpoint& c) {
  std::string then;
  try {
    then = config::load_stored_config(c.config_yaml, "its config").train.select_direction;
  } catch (const config::ConfigError&) {
    return;  // written by a version with other keys: nothing to compare it with
  }
  const std::string& wanted = now.train.select_direction;
  if (then == wanted) return;
  const auto measure = [](const std::string& d) { return d.empty() ? std::string("the mean over its directions") : d; };
  throw config::ConfigError(fmt::format(
      // restore() names the checkpoint's path in front of this.
      "its best checkpoint and early stopping follow {} (train.select_direction='{}'), this run's would follow {}: "
      "resuming would compare the one with the best of the other; keep train.select_direction='{}', or start a new "
      "run from it (train.finetune_from)",
      measure(then), then, measure(wanted), then));
}

}  // namespace

void Trainer::restore_from(const checkpoint::Checkpoint& c, const std::string& path) {
  checkpoint::check_same_directions(c, cfg_.data, path);  // first: it says why the vocabularies differ
  checkpoint::check_vocabulary(c, path, train_->manifest());
  check_schedule_end_unchanged(c, path);
  check_selection_unchanged(cfg_, c);
  if (const std::string note = precision_change_note(cfg_, c, path); !note.empty()) log_.info(note);
  checkpoint::check_same_computation(c, model_->config(), path);
  checkpoint::load_model_weights(*model_, c.model, path);
  load_optimizer_state(c, path);
  planner_->restore({c.planner_epoch, c.planner_cursor, c.planner_slots});
  update_ = c.update;
  epoch_ = c.epoch;
  best_valid_loss_ = c.best_valid_loss;
  best_bleu_ = c.best_bleu;
  bad_validations_ = c.bad_validations;
  history_ = nlohmann::json::parse(c.metrics_json);
  scaler_.restore(c.loss_scale, c.loss_scale_good_steps);
  const std::string gemm_note = runtime::keep_checkpoint_gemm(cfg_, c.gemm_backend, c.gemm_transposed_forward, gemm_);
  if (!gemm_note.empty()) log_.info(gemm_note);
  // Generator states are per rank. After a change of world size (allowed when
  // world_size x update_freq is unchanged, so the data plan is the same) the ranks keep
  // their fresh per-rank seeds: parameters continue exactly, dropout masks differ.
  if (static_cast<int>(c.cpu_rng.size()) == group_.world_size()) {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(c.cpu_rng[group_.rank()]);
    if (device_.is_cuda() && static_cast<int>(c.cuda_rng.size()) == group_.world_size()) {
      at::Generator cuda_gen = at::globalContext().defaultGenerator(device_);
      cuda_gen.set_state(c.cuda_rng[group_.rank()]);
    }
  } else {
    log_.info(fmt::format("checkpoint has generator states of {} ranks, this job has {}: dropout reseeded",
                          c.cpu_rng.size(), group_.world_size()));
  }
  log_.info(fmt::format("resumed from {} at update {} (epoch {}, cursor {})", path, update_, c.planner_epoch,
                        c.planner_cursor));
}

void Trainer::load_optimizer_state(const checkpoint::Checkpoint& c, const std::string& path) {
  try {
    optim_->load_state_dict(c.optimizer);
  } catch (const std::runtime_error& e) {
    throw checkpoint::CheckpointError(path + ": " + e.what());
  }
}

void Trainer::start_from_hf(const std::string& dir) {
  checkpoint::HfModel hf = checkpoint::read_hf_model(dir);
  checkpoint::check_hf_model(hf, model_->config(), train_->manifest(), cfg_.data.shard_dir, dir);
  // A model configured with model.output_bias whose import has none (all zeros) starts it at 0.
  if (model_->config().output_bias && !hf.weights.contains("output_bias"))
    hf.weights.insert("output_bias", torch::zeros({model_->config().vocab_size}));
  checkpoint::load_model_weights(*model_, hf.weights, dir);
  log_.info(fmt::format("fine-tuning from the transformers model {} ({} parameters; optimizer, schedule and planner "
                        "start fresh)", dir, model::parameter_count(*model_)));
}

void Trainer::start_from(const std::string& path) {
  if (checkpoint::is_hf_model_dir(path)) return start_from_hf(path);
  checkpoint::Checkpoint c = checkpoint::load_checkpoint(path);
  checkpoint::check_vocabulary(c, path + " (train.finetune_from)", train_->manifest());
  checkpoint::load_model_weights(*model_, c.model, path);
  if (!cfg_.train.reset_optimizer) load_optimizer_state(c, path);
  if (!cfg_.train.reset_schedule) update_ = c.update;
  if (!cfg_.train.reset_planner) planner_->restore({c.planner_epoch, c.planner_cursor, c.planner_slots});
  log_.info(fmt::format("fine-tuning from {} (update {}); reset optimizer {}, schedule {}, planner {}", path, c.update,
                        cfg_.train.reset_optimizer, cfg_.train.reset_schedule, cfg_.train.reset_planner));
}

}  // namespace nmt::trainer
