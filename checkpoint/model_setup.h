#pragma once
// What train, evaluate and translate share: the model's configuration from the config
// plus the shard manifest, and loading a checkpoint for inference (the device they choose
// with runtime/device.h).
#include <torch/torch.h>

#include <string>

#include "checkpoint/checkpoint.h"
#include "config/config.h"
#include "data/manifest.h"
#include "model/transformer.h"

namespace nmt::checkpoint {

// Refuses a config whose keys disagree with what the shards' manifest records
// (data.src_lang and data.tgt_lang, or a multilingual model's data.directions and
// data.lang_tag), naming the key, both values and both places.
void check_config_against_manifest(const config::Config& cfg, const data::Manifest& manifest);
// "[de-en, en-de]": a config's data.directions, or a manifest's, as messages print them.
std::string directions_text(const data::DataConfig& d);
std::string manifest_directions_text(const data::Manifest& m);

// Refuses (CheckpointError naming `what`) a checkpoint trained on other data.directions or
// another data.lang_tag than `now`'s: a multilingual checkpoint given to a bilingual config, the
// reverse, or a resume whose directions changed. A stored config that does not parse is not compared.
void check_same_directions(const Checkpoint& ckpt, const data::DataConfig& now, const std::string& what);

// Throws CheckpointError, naming `what` (the checkpoint's path, and why it was read), when
// the checkpoint was trained with another vocabulary than the shards'.
void check_vocabulary(const Checkpoint& ckpt, const std::string& what, const data::Manifest& manifest);

// The model section plus what only the data knows (vocabulary size, pad id); checks the
// config against the manifest first.
model::ModelConfig model_config_for(const config::Config& cfg, const data::Manifest& manifest);

// Refuses (CheckpointError naming the key and both values) a configured model that differs from
// the one the checkpoint was trained as in a key that changes what the model computes but not
// its parameters' names or shapes, so that loading the weights would not notice: model.heads and
// model.fix_norm. A checkpoint whose stored config does not parse (another version's keys) is
// not compared.
void check_same_computation(const Checkpoint& ckpt, const model::ModelConfig& configured, const std::string& what);

// Builds the configured model and loads a checkpoint's weights into it, refusing a
// checkpoint of another vocabulary or shape with a message naming file and field.
model::Transformer load_model_for_inference(const config::Config& cfg, const data::Manifest& manifest,
                                            const std::string& checkpoint_path, const torch::Device& device);

// The reverse-direction model of noisy-channel reranking (eval.channel_checkpoint): built
// with the shape recorded in the checkpoint's own config, so it may differ from the direct
// model's; refused unless it was trained on the shards' vocabulary for tgt_lang -> src_lang.
model::Transformer load_channel_model(const data::Manifest& manifest, const std::string& checkpoint_path,
                                      const torch::Device& device);

}  // namespace nmt::checkpoint
