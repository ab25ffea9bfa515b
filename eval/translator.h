#pragma once
// Text in, text out: SentencePiece encoding, length-sorted batching, search, and
// detokenization around a trained model. Shared by evaluate and translate.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "data/manifest.h"
#include "data/tokenizer.h"
#include "eval/search.h"
#include "model/transformer.h"
#include "config/config.h"

namespace nmt::eval {

struct Translation {
  std::string text;    // detokenized
  double score = 0;    // length-normalised log-probability
};

// Cuts a source to max_positions - 1 pieces, leaving room for EOS in the positional table:
// what every decoded source goes through (Translator::encode, split_sources).
void truncate_source(std::vector<int32_t>& ids, int64_t max_positions);

class Translator {
 public:
  // Loads the shard directory's manifest and SentencePiece model and the checkpoints,
  // refusing one trained with another vocabulary or model shape. Several checkpoints
  // decode as an ensemble (eval/ensemble.h), each of the config's model shape. With
  // eval.channel_checkpoint, the beam's hypotheses are reranked by that reverse-direction
  // model (eval/channel.h).
  Translator(const config::Config& cfg, const std::vector<std::string>& checkpoints, const torch::Device& device);
  // Around a model already in memory (validation BLEU during training; no channel).
  Translator(const config::Config& cfg, model::Transformer model, const torch::Device& device);

  const data::Manifest& manifest() const { return manifest_; }
  // A multilingual model decoding a direction it was not trained on (eval.zero_shot).
  bool zero_shot() const { return zero_shot_; }
  SearchOptions& options() { return options_; }

  // The vocabulary's ids of `line`, cut as truncate_source does (encode) or whole (encode_whole).
  std::vector<int32_t> encode(const std::string& line) const;
  std::vector<int32_t> encode_whole(const std::string& line) const;
  std::string decode(const std::vector<int64_t>& ids) const;

  // N-best translations of each source (ids without EOS), in input order. Empty
  // sources get one empty translation without running the model. sources[i] is line
  // first_line + i of the whole input: under eval.sampling its draws depend on that number.
  std::vector<std::vector<Translation>> translate_ids(const std::vector<std::vector<int32_t>>& sources,
                                                      int64_t first_line = 0);
  std::vector<std::vector<Translation>> translate(const std::vector<std::string>& lines, int64_t first_line = 0);

 private:
  void init();
  // A multilingual model (data/manifest.h, directions): refuses data.src_lang -> data.tgt_lang
  // when the model never saw a language, or never trained the pair and eval.zero_shot is off
  // (ConfigError listing the directions it was trained on); sets zero_shot_.
  void check_direction();
  // Its language tag, in front of each source (source_prefix_) or as the search's first token.
  void set_language_tag();
  // The search's hypotheses of a batch, reranked by the channel model when there is one.
  std::vector<std::vector<Hypothesis>> search_batch(Ensemble& models, const std::vector<std::vector<int32_t>>& seqs,
                                                    const std::vector<int64_t>& lines);

  config::Config cfg_;
  data::Manifest manifest_;
  data::Tokenizer tokenizer_;  // the shards' vocabulary: SentencePiece, or a Marian vocabulary
  torch::Device device_;
  std::vector<model::Transformer> models_;
  model::Transformer channel_{nullptr};  // eval.channel_checkpoint's model, or none
  SearchOptions options_;
  std::vector<int32_t> source_prefix_;  // data.lang_tag: source, the target language's tag
  bool zero_shot_ = false;
};

}  // namespace nmt::eval
