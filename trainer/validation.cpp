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
  const auto& batches = valid_batches_;
  double loss = 0, nll = 0, tokens = 0;
  // Micro-batch j goes to rank j % world: every rank scores a share, sums are all-reduced.
  for (size_t j = static_cast<size_t>(group_.rank()); j < batches.size(); j += group_.world_size()) {
    data::Batch b = data::make_batch(*valid_, batches[j], special_);
    torch::Tensor hidden = model_->forward_hidden(b.src.to(device_), b.tgt_in.to(device_));
    optim::LossSums l =
        optim::label_smoothed_loss(hidden, b.tgt_out.to(device_), special_.pad, cfg_.optim.label_smoothing,
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
