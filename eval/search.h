#pragma once
// Batched greedy and beam search over the Transformer's incremental decoder.
#include <torch/torch.h>

#include <vector>

#include "eval/ensemble.h"
#include "eval/sampling.h"
#include "model/transformer.h"

namespace nmt::eval {

struct SearchOptions {
  int64_t beam = 5;         // 1 = greedy
  double lenpen = 1.0;      // hypotheses ranked by score / length^lenpen (length counts EOS)
  double max_len_a = 1.2;   // at most max_len_a * src_len + max_len_b target pieces
  int64_t max_len_b = 10;
  int64_t nbest = 1;        // hypotheses returned per sentence (<= beam)
  int64_t bos = 2, eos = 3, pad = 0;
  std::vector<int64_t> never_emit;  // further tokens no hypothesis may contain (source tags)
  bool sample = false;              // draw each token (sample_search) instead of searching
  SamplingOptions sampling;

  // The tokens no step may choose: pad, BOS and never_emit.
  std::vector<int64_t> banned() const;
};

struct Hypothesis {
  std::vector<int64_t> tokens;  // without BOS and EOS
  double score = 0;             // sum of log-probabilities, EOS included
  double normalized = 0;        // score / (tokens + 1)^lenpen
};

// The ranking score of a hypothesis: score / (tokens + 1)^lenpen (EOS counted).
double normalize(double score, size_t tokens, double lenpen);

// src: [batch, src_len] int64 (EOS-terminated, pad on the right). Returns, per sentence,
// up to `nbest` hypotheses, best first. `models` is one model or an ensemble (eval/ensemble.h).
std::vector<std::vector<Hypothesis>> greedy_search(Ensemble& models, const torch::Tensor& src,
                                                   const SearchOptions& opt);
std::vector<std::vector<Hypothesis>> beam_search(Ensemble& models, const torch::Tensor& src, const SearchOptions& opt);
// One drawn translation per sentence (opt.sampling); lines[i] is sentence i's line number in
// the input, which with the seed fixes its draws (eval/sampling.h).
std::vector<std::vector<Hypothesis>> sample_search(Ensemble& models, const torch::Tensor& src, const SearchOptions& opt,
                                                   const std::vector<int64_t>& lines);
// opt.sample ? sampled : beam == 1 ? greedy : beam. `lines` as for sample_search (empty:
// 0, 1, ...).
std::vector<std::vector<Hypothesis>> search(Ensemble& models, const torch::Tensor& src, const SearchOptions& opt,
                                            const std::vector<int64_t>& lines = {});

// The same with one model.
std::vector<std::vector<Hypothesis>> greedy_search(model::TransformerImpl& model, const torch::Tensor& src,
                                                   const SearchOptions& opt);
std::vector<std::vector<Hypothesis>> beam_search(model::TransformerImpl& model, const torch::Tensor& src,
                                                 const SearchOptions& opt);
std::vector<std::vector<Hypothesis>> search(model::TransformerImpl& model, const torch::Tensor& src,
                                            const SearchOptions& opt);

}  // namespace nmt::eval
