#include "trainer/trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <regex>

#include "data/progress.h"
#include "data/text_file.h"
#include "trainer/config_error.h"
#include "data/sha256.h"
#include "trainer/config_loader.h"
#include "trainer/autocast.h"
#include "trainer/flops.h"
#include "trainer/loss.h"
#include "trainer/model_setup.h"
#include "trainer/shared_paths.h"
#include "trainer/stop_signal.h"

namespace fs = std::filesystem;

namespace nmt::trainer {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<std::pair<std::string, torch::Tensor>> named_params(torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

// update_<N>.pt files of a run directory, oldest first.
std::vector<std::pair<int64_t, fs::path>> periodic_checkpoints(const fs::path& dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  if (!fs::is_directory(dir)) return out;
  static const std::regex re("update_([0-9]+)\\.pt");
  for (const auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, re)) out.emplace_back(std::stoll(m[1]), e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Trainer::Trainer(const Config& cfg, const dist::ProcessGroup& group, BleuValidator bleu)
    : cfg_(cfg), group_(group), device_(choose_device(cfg.train, group.local_rank())),
      schedule_(cfg.schedule, cfg.model.d_model), log_(cfg.train.save_dir, group.is_main()), bleu_(std::move(bleu)) {
  torch::set_num_threads(static_cast<int>(cfg_.train.threads));
  comm_ = dist::make_communicator(cfg_.dist, group_, device_);
  check_every_rank_sees_the_run(cfg_, *comm_);  // before any rank reads shards: one message names the host
  train_ = std::make_unique<data::ShardedCorpus>(cfg_.data.shard_dir, cfg_.data.train_split);
  valid_ = std::make_unique<data::ShardedCorpus>(cfg_.data.shard_dir, cfg_.data.valid_split);
  special_ = train_->manifest().special;
  // Inputs that would otherwise fail only at the first validation, or at a random
  // update, are refused now: before any training time is spent.
  for (const data::ShardedCorpus* c : {train_.get(), valid_.get()}) {
    int64_t longest = 0;
    for (int64_t i = 0; i < c->size(); ++i)
      longest = std::max<int64_t>(longest, std::max(c->src_lengths()[i], c->tgt_lengths()[i]) + 1);
    if (longest > cfg_.model.max_positions)
      throw ConfigError(fmt::format("config key 'model.max_positions' = {}: split '{}' has a sentence of {} positions "
                                    "(raise it, or lower data.max_len and preprocess again)",
                                    cfg_.model.max_positions, c->split(), longest));
  }
  valid_batches_ = data::pack_micro_batches(valid_->src_lengths(), valid_->tgt_lengths(), cfg_.data.max_tokens);
  if (bleu_ && data::find_split_file(cfg_.data.raw_dir, cfg_.data.valid_split, cfg_.data.tgt_lang).empty())
    throw ConfigError("config key 'train.validate_bleu' = true: no reference " + cfg_.data.valid_split + "." +
                      cfg_.data.tgt_lang + "[.gz] in data.raw_dir = '" + cfg_.data.raw_dir + "'");

  // Same seed on every rank: identical initial parameters (rank 0's are broadcast anyway).
  torch::manual_seed(static_cast<uint64_t>(cfg_.train.seed));
  model_ = model::Transformer(model_config_for(cfg_, train_->manifest()));
  model_->to(device_);
  model_->train();
  for (auto& p : model_->parameters()) p.mutable_grad() = torch::zeros_like(p);  // reducer needs defined grads
  optim_ = std::make_unique<Adam>(named_params(*model_), cfg_.optim);
  reducer_ = std::make_unique<dist::GradReducer>(model_->parameters(), *comm_, cfg_.dist.bucket_mb,
                                                  cfg_.dist.overlap, cfg_.dist.deterministic_reduce,
                                                  cfg_.dist.grad_dtype == "bf16"   ? torch::kBFloat16
                                                  : cfg_.dist.grad_dtype == "fp16" ? torch::kHalf
                                                                                   : torch::kFloat32);
  planner_ = std::make_unique<data::BatchPlanner>(
      train_->src_lengths(), train_->tgt_lengths(),
      data::PlanOptions{cfg_.data.max_tokens, static_cast<uint64_t>(cfg_.train.seed), group_.world_size(),
                        cfg_.train.update_freq});
  // Dropout differs per rank (different data deserve different masks), yet is reproducible.
  torch::manual_seed(static_cast<uint64_t>(cfg_.train.seed) * 1000003ull + static_cast<uint64_t>(group_.rank()));
  if (cfg_.debug.anomaly) torch::autograd::AnomalyMode::set_enabled(true);
}

Trainer::~Trainer() = default;

Trainer::StepTimes& Trainer::StepTimes::operator+=(const StepTimes& o) {
  data += o.data;
  forward += o.forward;
  backward += o.backward;
  reduce += o.reduce;
  optimizer += o.optimizer;
  return *this;
}

Trainer::StepResult Trainer::train_step(const std::vector<data::MicroBatch>& mine) {
  comm_->set_phase(fmt::format("update {}", update_ + 1));
  StepResult r;
  auto mark = std::chrono::steady_clock::now();
  auto lap = [&mark](double& into) {  // adds the time since the last lap to `into`
    const auto now = std::chrono::steady_clock::now();
    into += std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  std::vector<data::Batch> batches;
  int64_t local_tokens = 0;
  for (const auto& mb : mine) {
    batches.push_back(data::make_batch(*train_, mb, special_));
    const data::Batch& b = batches.back();
    local_tokens += b.tgt_tokens;
    if (b.empty()) continue;
    r.local_src_tokens += b.src_tokens;
    r.local_tgt_tokens += b.tgt_tokens;
    r.local_padded += b.src.numel() + b.tgt_out.numel();
    r.local_flops += training_flops(model_->config(), {b.src.size(0), b.src.size(1), b.tgt_out.size(1), b.src_tokens,
                                                       b.tgt_tokens});
  }
  lap(r.times.data);
  // The update's gradient is the sum over all micro-batches of all ranks divided by their
  // total target tokens, known before the first backward (DESIGN.md, loss normalization).
  const int64_t total_tokens = static_cast<int64_t>(comm_->all_reduce_sum(static_cast<double>(local_tokens)));
  r.tokens = total_tokens;
  const bool fp16 = cfg_.train.precision == "fp16";
  const double loss_scale = fp16 ? scaler_.scale() : 1.0;
  torch::Tensor loss_sum = torch::zeros({}, torch::kFloat64), nll_sum = torch::zeros({}, torch::kFloat64);
  lap(r.times.reduce);
  for (size_t k = 0; k < batches.size(); ++k) {
    const bool last = k + 1 == batches.size();
    if (last) reducer_->arm();  // all-reduce only after the final micro-batch's backward
    const data::Batch& b = batches[k];
    if (b.empty()) continue;
    LossSums l;
    {
      AutocastScope autocast(device_, cfg_.train.precision);
      torch::Tensor hidden = model_->forward_hidden(b.src.to(device_), b.tgt_in.to(device_));
      l = label_smoothed_loss(hidden, b.tgt_out.to(device_), special_.pad, cfg_.optim.label_smoothing,
                              [&](const torch::Tensor& h) { return model_->project(h); });
    }
    if (cfg_.debug.nan_update > 0 && update_ + 1 >= cfg_.debug.nan_update &&
        update_ + 1 < cfg_.debug.nan_update + cfg_.debug.nan_count)
      l.loss = l.loss * std::numeric_limits<double>::quiet_NaN();  // fault injection (debug.nan_update)
    lap(r.times.forward);
    (l.loss * (loss_scale / static_cast<double>(total_tokens))).backward();
    loss_sum += l.loss.detach().to(torch::kCPU, torch::kFloat64);
    nll_sum += l.nll.to(torch::kCPU, torch::kFloat64);
    lap(r.times.backward);
  }
  reducer_->finish();
  // One all-reduce for both sums.
  auto sums = torch::stack({loss_sum, nll_sum});
  if (group_.world_size() > 1) {
    sums = sums.to(comm_->device());
    comm_->all_reduce_sum(sums)->wait();
    sums = sums.cpu();
  }
  r.loss = sums[0].item<double>();
  r.nll = sums[1].item<double>();
  lap(r.times.reduce);

  std::vector<torch::Tensor> grads;
  for (auto& p : model_->parameters()) grads.push_back(p.grad());
  // Every rank holds the same reduced gradients and loss, so all reach the same verdict.
  double norm = torch::linalg_vector_norm(torch::stack(torch::_foreach_norm(grads)), 2).item<double>();
  const bool finite = std::isfinite(r.loss) && std::isfinite(norm);
  if (fp16) {
    // fp16 overflow is expected now and then: skip, lower the scale, go on.
    if (scaler_.update(!finite)) {
      log_.info(fmt::format("update {}: fp16 gradient overflow, update skipped, loss scale now {}", update_ + 1,
                            scaler_.scale()));
      r.skipped = true;
      optim_->zero_grad();
      ++update_;
      lap(r.times.optimizer);
      return r;
    }
    torch::NoGradGuard no_grad;
    torch::_foreach_mul_(grads, 1.0 / loss_scale);
    norm /= loss_scale;
  } else if (!finite) {
    const std::string what = !std::isfinite(r.loss)
                                 ? fmt::format("the loss is {}", r.loss)
                                 : fmt::format("non-finite gradient in parameter '{}'", nonfinite_parameter());
    r.skipped = handle_nonfinite(what);
    optim_->zero_grad();
    ++update_;
    return r;
  }
  consecutive_skips_ = 0;
  if (cfg_.optim.clip_norm > 0 && norm > cfg_.optim.clip_norm) {
    torch::NoGradGuard no_grad;
    torch::_foreach_mul_(grads, cfg_.optim.clip_norm / (norm + 1e-6));
  }
  r.lr = schedule_.lr(update_ + 1);
  optim_->step(r.lr);
  optim_->zero_grad();
  ++update_;
  lap(r.times.optimizer);
  return r;
}

namespace {
// fp32 matrix-multiply FLOP/s of this process with its intra-op threads: the peak MFU is
// measured against, on the same LibTorch build and threads as training.
double matmul_peak_flops(const torch::Device& device) {
  const int64_t n = 2048;
  auto a = torch::randn({n, n}, torch::TensorOptions().device(device)), b = torch::randn_like(a);
  for (int i = 0; i < 3; ++i) torch::mm(a, b);
  int reps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double secs = 0;
  while (secs < 1.0) {
    torch::mm(a, b);
    ++reps;
    if (device.is_cuda()) torch::cuda::synchronize();
    secs = seconds_since(t0);
  }
  return 2.0 * n * n * n * reps / secs;
}

double peak_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  double kb = 0;
  while (std::fgets(line, sizeof(line), f))
    if (std::sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}
}  // namespace

nlohmann::json Trainer::benchmark(int64_t warmup, int64_t updates, const std::string& out_dir) {
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model_->parameters()) comm_->broadcast(p, 0);
  }
  if (!out_dir.empty() && group_.is_main()) {
    // What bench/pytorch_reference.py needs to run the same computation: the initial
    // weights and the micro-batches (example indices) of every update, in order.
    fs::create_directories(out_dir);
    Checkpoint init = make_checkpoint();
    save_checkpoint(init, (fs::path(out_dir) / "init.pt").string());
    data::BatchPlanner copy = *planner_;
    nlohmann::json plan = nlohmann::json::array();
    for (int64_t i = 0; i < warmup + updates; ++i) {  // every slot of each update, all ranks'
      const auto at = copy.state();
      plan.push_back(copy.update_slots(at.epoch, at.cursor));
      copy.next(0);
    }
    std::ofstream((fs::path(out_dir) / "plan.json").string()) << plan.dump() << "\n";
  } else if (!out_dir.empty()) {
    make_checkpoint();  // collective
  }
  for (int64_t i = 0; i < warmup; ++i) train_step(planner_->next(group_.rank()));
  StepTimes times;
  double src_tokens = 0, tgt_tokens = 0, padded = 0, flops = 0;
  std::vector<double> losses;  // per timed update, per target token (compare with the reference)
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < updates; ++i) {
    const StepResult r = train_step(planner_->next(group_.rank()));
    times += r.times;
    src_tokens += static_cast<double>(r.local_src_tokens);
    tgt_tokens += static_cast<double>(r.local_tgt_tokens);
    padded += static_cast<double>(r.local_padded);
    flops += r.local_flops;
    losses.push_back(r.loss / static_cast<double>(std::max<int64_t>(r.tokens, 1)));
  }
  if (device_.is_cuda()) torch::cuda::synchronize();
  const double secs = seconds_since(t0);
  // Sums over ranks; the slowest rank's clock sets the pace.
  src_tokens = comm_->all_reduce_sum(src_tokens);
  const double all_tgt = comm_->all_reduce_sum(tgt_tokens);
  padded = comm_->all_reduce_sum(padded);
  flops = comm_->all_reduce_sum(flops);
  const double wall = comm_->all_reduce_max(secs);
  const double peak = comm_->all_reduce_sum(matmul_peak_flops(device_));  // every rank's peak, measured apart
  auto share = [&](double t) { return t / times.total(); };
  return {{"ranks", group_.world_size()},
          {"threads", cfg_.train.threads},
          {"updates", updates},
          {"tgt_tokens_per_s", all_tgt / wall},
          {"src_tgt_tokens_per_s", (src_tokens + all_tgt) / wall},
          {"updates_per_s", static_cast<double>(updates) / wall},
          {"seconds", wall},
          {"breakdown", {{"data", share(times.data)}, {"forward", share(times.forward)},
                         {"backward", share(times.backward)}, {"reduce_wait", share(times.reduce)},
                         {"optimizer", share(times.optimizer)}}},
          {"padding_fraction", 1.0 - (src_tokens + all_tgt) / padded},
          {"peak_rss_bytes", comm_->all_reduce_max(peak_rss_bytes())},
          {"model_flops_per_update", flops / static_cast<double>(updates)},
          {"achieved_flops_per_s", flops / wall},
          {"matmul_peak_flops_per_s", peak},
          {"mfu", flops / wall / peak},
          {"parameters", model::parameter_count(*model_)},
          {"losses", losses}};
}

std::string Trainer::nonfinite_parameter() const {
  for (const auto& p : model_->named_parameters())
    if (!torch::isfinite(p.value().grad()).all().item<bool>()) return p.key();
  return "?";
}

bool Trainer::handle_nonfinite(const std::string& what) {
  const std::string msg = fmt::format("update {}: {}", update_ + 1, what);
  if (cfg_.train.nonfinite == "stop")
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

Trainer::Validation Trainer::validate() {
  comm_->set_phase(fmt::format("validation after update {}", update_));
  torch::NoGradGuard no_grad;
  model_->eval();
  const auto& batches = valid_batches_;
  double loss = 0, nll = 0, tokens = 0;
  // Micro-batch j goes to rank j % world: every rank scores a share, sums are all-reduced.
  for (size_t j = static_cast<size_t>(group_.rank()); j < batches.size(); j += group_.world_size()) {
    data::Batch b = data::make_batch(*valid_, batches[j], special_);
    torch::Tensor hidden = model_->forward_hidden(b.src.to(device_), b.tgt_in.to(device_));
    LossSums l = label_smoothed_loss(hidden, b.tgt_out.to(device_), special_.pad, cfg_.optim.label_smoothing,
                                     [&](const torch::Tensor& h) { return model_->project(h); });
    loss += l.loss.item<double>();
    nll += l.nll.item<double>();
    tokens += static_cast<double>(l.tokens);
  }
  model_->train();
  loss = comm_->all_reduce_sum(loss);
  nll = comm_->all_reduce_sum(nll);
  tokens = comm_->all_reduce_sum(tokens);
  return {loss / tokens, nll / tokens};
}

Checkpoint Trainer::make_checkpoint() {
  comm_->set_phase(fmt::format("checkpoint at update {}", update_));
  Checkpoint c;
  c.model = model_weights(*model_);
  c.optimizer = optim_->state_dict();
  c.update = update_;
  c.epoch = epoch_;
  const auto st = planner_->state();
  c.planner_epoch = st.epoch;
  c.planner_cursor = st.cursor;
  c.planner_slots = st.slots_per_update;
  c.config_yaml = to_yaml(cfg_);
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
  return c;
}

void Trainer::save(bool best, bool best_bleu) {
  const Checkpoint c = make_checkpoint();  // on every rank: it gathers RNG states
  if (!group_.is_main()) return;
  const fs::path dir(cfg_.train.save_dir);
  fs::create_directories(dir);
  std::function<void()> crash;
  if (cfg_.debug.kill_in_save == update_)
    crash = [] { std::raise(SIGKILL); };  // fault injection: die with a complete temporary file
  save_checkpoint(c, (dir / "last.pt").string(), crash);
  if (cfg_.train.save_interval_updates > 0 && update_ % cfg_.train.save_interval_updates == 0) {
    save_checkpoint(c, (dir / fmt::format("update_{}.pt", update_)).string());
    auto all = periodic_checkpoints(dir);
    // keep_last: remove the oldest periodic checkpoints beyond the newest N.
    for (size_t i = 0; cfg_.train.keep_last > 0 && i + cfg_.train.keep_last < all.size(); ++i) {
      fs::remove(all[i].second);
      fs::remove(all[i].second.string() + ".sha256");
    }
  }
  if (best) save_checkpoint(c, (dir / "best.pt").string());
  if (best_bleu) save_checkpoint(c, (dir / "best_bleu.pt").string());
}

std::optional<std::pair<std::string, Checkpoint>> Trainer::find_resume_checkpoint() {
  const fs::path dir(cfg_.train.save_dir);
  std::vector<fs::path> candidates = {dir / "last.pt"};
  auto periodic = periodic_checkpoints(dir);
  for (auto it = periodic.rbegin(); it != periodic.rend(); ++it) candidates.push_back(it->second);
  std::string reasons;
  for (const auto& p : candidates) {
    if (!fs::exists(p)) continue;
    try {
      return std::make_pair(p.string(), load_checkpoint(p.string()));
    } catch (const CheckpointError& e) {
      log_.info(fmt::format("resume auto: skipping {}: {}", p.string(), e.what()));
      reasons += std::string("\n  ") + e.what();
    }
  }
  // Checkpoints exist but none loads: starting fresh would overwrite them. Refuse.
  if (!reasons.empty())
    throw CheckpointError(cfg_.train.save_dir + ": --resume auto found checkpoints but none is valid:" + reasons);
  return std::nullopt;
}

void Trainer::restore(const std::string& path, std::optional<Checkpoint> preloaded) {
  try {
    restore_from(preloaded ? *preloaded : load_checkpoint(path), path);
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError(path + ": " + e.what());
  }
}

void Trainer::restore_from(const Checkpoint& c, const std::string& path) {
  if (c.vocab_sha256 != train_->manifest().spm_sha256)
    throw CheckpointError(path + ": field 'vocab_sha256' differs from data.shard_dir's vocabulary");
  load_model_weights(*model_, c.model, path);
  try {
    optim_->load_state_dict(c.optimizer);
  } catch (const std::runtime_error& e) {
    throw CheckpointError(path + ": " + e.what());
  }
  planner_->restore({c.planner_epoch, c.planner_cursor, c.planner_slots});
  update_ = c.update;
  epoch_ = c.epoch;
  best_valid_loss_ = c.best_valid_loss;
  best_bleu_ = c.best_bleu;
  bad_validations_ = c.bad_validations;
  history_ = nlohmann::json::parse(c.metrics_json);
  scaler_.restore(c.loss_scale, c.loss_scale_good_steps);
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

void Trainer::validate_and_save(const char* label, double wall_s) {
  const Validation v = validate();
  double bleu = -1;
  if (bleu_) {
    model_->eval();
    bleu = bleu_(model_, *comm_);  // every rank decodes its share
    model_->train();
  }
  // Early stopping follows BLEU when it is computed, else the loss.
  const bool loss_improved = v.loss < best_valid_loss_;
  const bool bleu_improved = bleu_ && bleu > best_bleu_;
  const bool improved = bleu_ ? bleu_improved : loss_improved;
  bad_validations_ = improved ? 0 : bad_validations_ + 1;
  if (loss_improved) best_valid_loss_ = v.loss;
  if (bleu_improved) best_bleu_ = bleu;
  log_.info(fmt::format("{} at update {} | loss {:.4f} | nll {:.4f} | ppl {:.2f}{}{}{}", label, update_, v.loss, v.nll,
                        std::exp(v.nll), bleu_ ? fmt::format(" | bleu {:.2f}", bleu) : std::string(),
                        loss_improved ? " | best loss" : "", bleu_improved ? " | best bleu" : ""));
  nlohmann::json rec = {{"event", "valid"}, {"update", update_}, {"epoch", epoch_}, {"valid_loss", v.loss},
                        {"valid_nll", v.nll}, {"valid_ppl", std::exp(v.nll)}, {"wall_s", wall_s}};
  if (bleu_) rec["valid_bleu"] = bleu;
  log_.metrics(rec);
  history_.push_back(rec);
  save(loss_improved, bleu_improved);
}

void Trainer::check_params_agree() {
  if (group_.world_size() == 1) return;
  // A bit-level digest of every parameter: ranks that drifted apart (a missed or
  // mismatched collective) differ here long before the loss shows it.
  std::string digest;
  for (const auto& p : model_->named_parameters()) {
    const torch::Tensor t = p.value().detach().cpu().contiguous();
    digest += data::sha256_hex(std::string_view(static_cast<const char*>(t.data_ptr()), t.nbytes()));
  }
  const auto all = comm_->all_gather_bytes(data::sha256_hex(digest));
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw TrainingError(fmt::format("update {}: parameters of rank {} differ from rank 0's (dist.check_params_interval)",
                                      update_, r));
}

bool Trainer::should_stop(int64_t epoch) const {
  if (cfg_.train.max_updates > 0 && update_ >= cfg_.train.max_updates) return true;
  if (cfg_.train.max_epochs > 0 && epoch > cfg_.train.max_epochs) return true;
  if (cfg_.train.patience > 0 && bad_validations_ >= cfg_.train.patience) return true;
  return false;
}

void Trainer::start_from(const std::string& path) {
  Checkpoint c = load_checkpoint(path);
  if (c.vocab_sha256 != train_->manifest().spm_sha256)
    throw CheckpointError(path + ": field 'vocab_sha256' differs from data.shard_dir's vocabulary (train.finetune_from)");
  load_model_weights(*model_, c.model, path);
  if (!cfg_.train.reset_optimizer) {
    try {
      optim_->load_state_dict(c.optimizer);
    } catch (const std::runtime_error& e) {
      throw CheckpointError(path + ": " + e.what());
    }
  }
  if (!cfg_.train.reset_schedule) update_ = c.update;
  if (!cfg_.train.reset_planner) planner_->restore({c.planner_epoch, c.planner_cursor, c.planner_slots});
  log_.info(fmt::format("fine-tuning from {} (update {}); reset optimizer {}, schedule {}, planner {}", path, c.update,
                        cfg_.train.reset_optimizer, cfg_.train.reset_schedule, cfg_.train.reset_planner));
}

void Trainer::run(const std::string& resume) {
  // Rank 0 (which writes checkpoints) decides which one every rank resumes from; a rank
  // that cannot read it fails, and the job with it.
  comm_->set_phase(resume.empty() ? "start" : "resume");
  std::string path = resume;
  std::optional<Checkpoint> preloaded;  // rank 0 of resume auto has read it already
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
  const auto st = planner_->state();
  const std::string position = fmt::format("{} {} {}", update_, st.epoch, st.cursor);
  for (const auto& other : comm_->all_gather_bytes(position))
    if (other != position)
      throw TrainingError("ranks start from different positions (update epoch cursor: " + position + " vs " + other + ")");
  // Rank 0's parameters are everyone's (at start and after resume).
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model_->parameters()) comm_->broadcast(p, 0);
  }
  log_.info(fmt::format("model: {} parameters | device {} | ranks {} | backend {} | {} updates/epoch | threads {}",
                        model::parameter_count(*model_), device_.str(), group_.world_size(), comm_->name(),
                        planner_->updates_per_epoch(), cfg_.train.threads));

  StopSignal signals;
  const auto t0 = std::chrono::steady_clock::now();
  auto window_start = t0;
  double window_loss = 0, window_nll = 0;
  int64_t window_tokens = 0, window_updates = 0;
  const int64_t first_update = update_;
  int stop_signal = 0;
  for (;;) {
    comm_->set_phase(fmt::format("update {} (start)", update_ + 1));
    epoch_ = planner_->state().epoch;
    // One all-reduce decides for every rank: rank 0's clock, and any rank's signal.
    auto flags = torch::tensor({group_.is_main() && cfg_.train.max_minutes > 0 &&
                                        seconds_since(t0) / 60.0 >= cfg_.train.max_minutes
                                    ? 1.0
                                    : 0.0,
                                static_cast<double>(signals.received())},
                               torch::kFloat64);
    if (group_.world_size() > 1) {
      flags = flags.to(comm_->device());
      comm_->all_reduce_sum(flags)->wait();
      flags = flags.cpu();
    }
    if (flags[1].item<double>() > 0) {
      comm_->set_phase(fmt::format("stop after update {}", update_));
      stop_signal = signals.received() ? signals.received() : SIGTERM;
      break;
    }
    if (should_stop(epoch_) || flags[0].item<double>() > 0) break;
    if (cfg_.debug.fault_update == update_ + 1 && cfg_.debug.fault_rank == group_.rank())
      throw TrainingError(fmt::format("injected fault on rank {} at update {} (debug.fault_rank/fault_update)",
                                      group_.rank(), update_ + 1));

    const StepResult r = train_step(planner_->next(group_.rank()));
    if (!r.skipped) {
      window_loss += r.loss;
      window_nll += r.nll;
      window_tokens += r.tokens;
      ++window_updates;
    }
    if ((update_ % cfg_.train.log_interval == 0 || update_ == first_update + 1) && window_updates > 0) {
      const double secs = seconds_since(window_start);
      const double per_update = seconds_since(t0) / static_cast<double>(update_ - first_update);
      double eta = NAN;
      if (cfg_.train.max_updates > 0) eta = per_update * static_cast<double>(cfg_.train.max_updates - update_);
      if (cfg_.train.max_minutes > 0) {
        const double left = cfg_.train.max_minutes * 60 - seconds_since(t0);
        eta = std::isnan(eta) ? left : std::min(eta, left);
      }
      const double loss = window_loss / window_tokens, nll = window_nll / window_tokens;
      log_.info(fmt::format("update {:>6} | epoch {:>3} | loss {:.4f} | nll {:.4f} | ppl {:.2f} | lr {:.3e} | "
                            "{:.0f} tgt tok/s | elapsed {} | ETA {}",
                            update_, epoch_, loss, nll, std::exp(nll), r.lr, window_tokens / secs,
                            data::format_duration(seconds_since(t0)), data::format_duration(eta)));
      log_.metrics({{"event", "train"}, {"update", update_}, {"epoch", epoch_}, {"loss", loss}, {"nll", nll},
                    {"ppl", std::exp(nll)}, {"lr", r.lr}, {"tgt_tokens_per_s", window_tokens / secs},
                    {"updates", window_updates}, {"wall_s", seconds_since(t0)}});
      window_start = std::chrono::steady_clock::now();
      window_loss = window_nll = 0;
      window_tokens = window_updates = 0;
    }
    if (cfg_.dist.check_params_interval > 0 && update_ % cfg_.dist.check_params_interval == 0) check_params_agree();
    if (update_ % cfg_.train.validate_interval_updates == 0) validate_and_save("validation", seconds_since(t0));
    else if (cfg_.train.save_interval_updates > 0 && update_ % cfg_.train.save_interval_updates == 0) save(false, false);
  }
  if (stop_signal) {
    // Preempted: checkpoint where every rank agreed to stop, and say how to continue.
    if (update_ > first_update) save(false, false);
    log_.info(fmt::format("stopped by signal {} after update {}; checkpoint {}/last.pt. Resume with: "
                          "train --config <config> --resume auto",
                          stop_signal, update_, cfg_.train.save_dir));
    if (!group_.is_main())
      std::fprintf(stderr, "%s: stopped by signal %d after update %lld\n", group_.label("train").c_str(), stop_signal,
                   static_cast<long long>(update_));
    return;
  }
  // Final validation and checkpoint, unless the last update just had them.
  if (update_ > first_update && update_ % cfg_.train.validate_interval_updates != 0)
    validate_and_save("final validation", seconds_since(t0));
  log_.info(fmt::format("done: {} updates in {} ({} epochs started), best validation loss {:.4f}{}", update_,
                        data::format_duration(seconds_since(t0)), epoch_, best_valid_loss_,
                        skipped_total_ ? fmt::format(", {} updates skipped", skipped_total_) : std::string()));
}

}  // namespace nmt::trainer
