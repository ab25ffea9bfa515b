#pragma once
// The models one search decodes with, as fairseq's `--path a.pt:b.pt` and Marian's
// `--models a b` do: one model gives its own logits, exactly as before; several give, at
// each step, the log of the mean of their next-token probabilities (equal weights). Each
// member keeps its own encoder output and caches, moved together when beams are reordered.
#include <torch/torch.h>

#include <vector>

#include "model/transformer.h"

namespace nmt::eval {

class Ensemble {
 public:
  // Members must share the vocabulary (the caller checks: checkpoint::check_vocabulary).
  explicit Ensemble(std::vector<model::TransformerImpl*> members);
  explicit Ensemble(model::TransformerImpl& model) : Ensemble(std::vector<model::TransformerImpl*>{&model}) {}

  size_t size() const { return members_.size(); }
  // The shortest positional table among the members: none may decode past its own.
  int64_t max_positions() const;

  // Encodes `src` [batch, src_len] with every member.
  void start(const torch::Tensor& src);
  // Decoder rows per sentence from now on (beam search: 1 at its first step, then k).
  void set_beams(int64_t beams);
  // Feeds `tokens` [rows] and returns [rows, vocab] scores for the next position: one
  // member's logits, or log(mean_m softmax(logits_m)), which is already normalised, so the
  // search's log-softmax leaves it as it is.
  torch::Tensor step(const torch::Tensor& tokens);
  // model::DecoderState::select, in every member.
  void select(const torch::Tensor& index);
  void select(const torch::Tensor& index, const torch::Tensor& shared_index);

 private:
  std::vector<model::TransformerImpl*> members_;
  std::vector<model::DecoderState> states_;
};

}  // namespace nmt::eval
