// Validation (loss, perplexity, optional BLEU) with early-stopping bookkeeping and the
// checkpoints it decides on, and the cross-rank parameter agreement check.
#include <fmt/format.h>

#include <cmath>

#include "base/sha256.h"
#include "optim/loss.h"
#include "trainer/trainer.h"

namespace nmt::trainer {

Trainer::Validation Trainer::validate() {
  comm_->set_phase(fmt::format("validation after update {}", update_));
  torch::NoGradGuard no_grad;
  model_->eval();
  const size_t splits = valid_->splits().size();
  std::vector<double> loss(splits), nll(splits), tokens(splits);
  // Micro-batch j goes to rank j % world: every rank scores a share, sums are all-reduced.
  for (size_t j = static_cast<size_t>(group_.rank()); j < valid_batches_.size(); j += group_.world_size()) {
    data::Batch b = data::make_batch(*valid_, valid_batches_[j], special_);
    torch::Tensor hidden = model_->forward_hidden(b.src.to(device_), b.tgt_in.to(device_));
    optim::LossSums l =
        optim::label_smoothed_loss(hidden, b.tgt_out.to(device_), special_.pad, cfg_.optim.label_smoothing,
                                   [&](const torch::Tensor& h) { return model_->project(h); });
    const size_t k = static_cast<size_t>(valid_batch_split_[j]);
    loss[k] += l.loss.item<double>();
    nll[k] += l.nll.item<double>();
    tokens[k] += static_cast<double>(l.tokens);
  }
  model_->train();
  Validation v;
  std::vector<std::pair<std::string, double>> losses, nlls;
  for (size_t k = 0; k < splits; ++k) {
    const double t = comm_->all_reduce_sum(tokens[k]);
    const double split_loss = comm_->all_reduce_sum(loss[k]) / t, split_nll = comm_->all_reduce_sum(nll[k]) / t;
    const std::string name = cfg_.data.directions.empty() ? "" : cfg_.data.directions[k].name();
    if (!name.empty()) v.directions.push_back({name, split_loss, split_nll});
    losses.emplace_back(name, split_loss);
    nlls.emplace_back(name, split_nll);
  }
  v.loss = selected(losses);
  v.nll = selected(nlls);
  return v;
}

double Trainer::selected(const std::vector<std::pair<std::string, double>>& values) const {
  if (values.size() == 1) return values.front().second;
  double sum = 0;
  for (const auto& [name, value] : values) {
    if (name == cfg_.train.select_direction) return value;
    sum += value;
  }
  return sum / static_cast<double>(values.size());
}

namespace {

// " | de-en 3.12 en-de 3.20": a multilingual model's per-direction losses (and BLEU), on the
// validation line.
std::string per_direction_text(const std::vector<std::pair<std::string, double>>& losses,
                               const std::vector<std::pair<std::string, double>>& bleu) {
  if (losses.empty()) return "";
  std::string out = " |";
  for (size_t k = 0; k < losses.size(); ++k) {
    out += fmt::format(" {} {:.3f}", losses[k].first, losses[k].second);
    if (k < bleu.size()) out += fmt::format("/{:.1f}", bleu[k].second);
  }
  return out;
}

}  // namespace

void Trainer::validate_and_save(const char* label, double wall_s) {
  const Validation v = validate();
  std::vector<std::pair<std::string, double>> direction_losses;
  for (const auto& d : v.directions) direction_losses.emplace_back(d.name, d.loss);
  double bleu = -1;
  std::vector<std::pair<std::string, double>> bleus;
  if (bleu_) {
    model_->eval();
    bleus = bleu_(model_, *comm_);  // every rank decodes its share
    bleu = selected(bleus);
    model_->train();
  }
  // Early stopping follows BLEU when it is computed, else the loss.
  const bool loss_improved = v.loss < best_valid_loss_;
  const bool bleu_improved = bleu_ && bleu > best_bleu_;
  const bool improved = bleu_ ? bleu_improved : loss_improved;
  bad_validations_ = improved ? 0 : bad_validations_ + 1;
  if (loss_improved) best_valid_loss_ = v.loss;
  if (bleu_improved) best_bleu_ = bleu;
  log_.info(fmt::format("{} at update {} | loss {:.4f} | nll {:.4f} | ppl {:.2f}{}{}{}{}", label, update_, v.loss, v.nll,
                        std::exp(v.nll), bleu_ ? fmt::format(" | bleu {:.2f}", bleu) : std::string(),
                        per_direction_text(direction_losses, bleus), loss_improved ? " | best loss" : "",
                        bleu_improved ? " | best bleu" : ""));
  nlohmann::json rec = {{"event", "valid"}, {"update", update_}, {"epoch", epoch_}, {"valid_loss", v.loss},
                        {"valid_nll", v.nll}, {"valid_ppl", std::exp(v.nll)}, {"wall_s", wall_s}};
  if (bleu_) rec["valid_bleu"] = bleu;
  // Flat keys, so that TensorBoard shows valid/loss/de-en (metrics/train_log.cpp) and plot_run
  // reads them as it reads the others.
  for (const auto& d : v.directions) {
    rec["valid_loss/" + d.name] = d.loss;
    rec["valid_nll/" + d.name] = d.nll;
  }
  if (!v.directions.empty())
    for (const auto& [name, value] : bleus) rec["valid_bleu/" + name] = value;
  log_.metrics(rec);
  history_.push_back(rec);
  save(loss_improved, bleu_improved, /*validated=*/true);
}

void Trainer::check_params_agree() {
  if (group_.world_size() == 1) return;
  // A bit-level digest of every parameter: ranks that drifted apart (a missed or
  // mismatched collective) differ here long before the loss shows it.
  std::string digest;
  for (const auto& p : model_->named_parameters()) {
    const torch::Tensor t = p.value().detach().cpu().contiguous();
    digest += base::sha256_hex(std::string_view(static_cast<const char*>(t.data_ptr()), t.nbytes()));
  }
  const auto all = comm_->all_gather_bytes(base::sha256_hex(digest));
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw TrainingError(fmt::format("update {}: parameters of rank {} differ from rank 0's (dist.check_params_interval)",
                                      update_, r));
}

}  // namespace nmt::trainer
