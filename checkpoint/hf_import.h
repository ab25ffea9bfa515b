#pragma once
// A Hugging Face `transformers` model directory as the start of a fine-tuning run
// (train.finetune_from: DIR): MarianMTModel (post-norm, as OPUS-MT publishes it) or
// PegasusForConditionalGeneration (pre-norm, what tools/export_hf.py writes for our pre-norm
// models). The parameter table is tools/hf_layout.py's, read the other way: their q/k/v
// projections fused into ours, their [sin | cos] feature order permuted back to our
// interleaved one, final_logits_bias as model.output_bias, the key bias dropped (softmax
// cancels it; ours is 0 by construction, model/attention.h). Export then import gives our
// tensors back bit for bit.
//
// What it refuses, each with the file and the key: a directory without config.json or
// model.safetensors; another architecture or activation; unscaled or learned positions,
// untied embeddings; a config model section that disagrees with the import (the key named);
// a vocabulary whose size differs from the weights, or whose vocab.json does not give every
// piece of the shards' SentencePiece model its id there; special ids that differ from the
// shards' (pad, EOS, and the decoder's start token, our BOS).
#include <torch/torch.h>

#include <string>

#include "data/manifest.h"
#include "model/model_config.h"

namespace nmt::checkpoint {

// True when `path` is a directory holding a config.json (a transformers model), not a file.
bool is_hf_model_dir(const std::string& path);

struct HfModel {
  model::ModelConfig config;  // the architecture config.json describes (vocab_size and pad_id included)
  c10::Dict<std::string, torch::Tensor> weights;  // our names, our layout
  int64_t eos_id = -1, decoder_start_id = -1;
};

HfModel read_hf_model(const std::string& dir);

// Refuses an import that `configured` (the run's model section, with the manifest's vocabulary)
// or the shards in `shard_dir` do not match.
void check_hf_model(const HfModel& hf, const model::ModelConfig& configured, const data::Manifest& manifest,
                    const std::string& shard_dir, const std::string& dir);

}  // namespace nmt::checkpoint
