#include "eval/ensemble.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace nmt::eval {

Ensemble::Ensemble(std::vector<model::TransformerImpl*> members) : members_(std::move(members)) {
  if (members_.empty()) throw std::invalid_argument("Ensemble: no model to decode with");
}

int64_t Ensemble::max_positions() const {
  int64_t shortest = members_.front()->config().max_positions;
  for (const auto* m : members_) shortest = std::min(shortest, m->config().max_positions);
  return shortest;
}

void Ensemble::start(const torch::Tensor& src) {
  states_.clear();
  for (auto* m : members_) states_.push_back(m->start_decoding(src));
}

void Ensemble::set_beams(int64_t beams) {
  for (auto& s : states_) s.beams = beams;
}

torch::Tensor Ensemble::step(const torch::Tensor& tokens) {
  if (members_.size() == 1) return members_.front()->decode_step_logits(tokens, states_.front());
  // fairseq's EnsembleModel: logsumexp over the members' log-probabilities minus log(M), in
  // float32 whatever precision the members decode in.
  std::vector<torch::Tensor> log_probs;
  for (size_t i = 0; i < members_.size(); ++i)
    log_probs.push_back(torch::log_softmax(members_[i]->decode_step_logits(tokens, states_[i]), -1, torch::kFloat));
  return torch::logsumexp(torch::stack(log_probs), 0) - std::log(static_cast<double>(members_.size()));
}

void Ensemble::select(const torch::Tensor& index) {
  for (auto& s : states_) s.select(index);
}

void Ensemble::select(const torch::Tensor& index, const torch::Tensor& shared_index) {
  for (auto& s : states_) s.select(index, shared_index);
}

}  // namespace nmt::eval
