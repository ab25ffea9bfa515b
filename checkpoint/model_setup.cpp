#include "checkpoint/model_setup.h"

#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "config/config_error.h"
#include "config/config_loader.h"
#include "runtime/memory_estimate.h"

namespace nmt::checkpoint {
namespace {

// The model section plus what only the data knows (vocabulary size, pad id).
model::ModelConfig with_vocabulary(model::ModelConfig m, const data::Manifest& manifest) {
  m.vocab_size = manifest.vocab_size;
  m.pad_id = manifest.special.pad;
  return m;
}

// The model of `model_cfg` with the checkpoint's weights, on `device`, in eval mode.
model::Transformer inference_model(const model::ModelConfig& model_cfg, const Checkpoint& ckpt, const std::string& what,
                                   const torch::Device& device) {
  model::Transformer model(model_cfg);
  load_model_weights(*model, ckpt.model, what);
  model->to(device);
  model->eval();
  return model;
}

// The config the checkpoint was trained with, or nullopt when it does not parse (written by a
// version with other keys: nothing to compare it with).
std::optional<config::Config> stored_config(const Checkpoint& ckpt, const std::string& what) {
  try {
    return config::load_stored_config(ckpt.config_yaml, what + " (its config)");
  } catch (const config::ConfigError&) {
    return std::nullopt;
  }
}

std::string bracketed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return "[" + out + "]";
}

}  // namespace

std::string directions_text(const data::DataConfig& d) {
  std::vector<std::string> names;
  for (const auto& dir : d.directions) names.push_back(dir.name());
  return bracketed(names);
}

std::string manifest_directions_text(const data::Manifest& m) { return bracketed(m.directions); }

void check_config_against_manifest(const config::Config& cfg, const data::Manifest& manifest) {
  // What the manifest records about how the shards were made must agree with the config
  // that reads them: swapped languages would train (or score) the wrong direction.
  const std::string manifest_path = cfg.data.shard_dir + "/manifest.json";
  auto check = [&](const std::string& key, const std::string& ours, const std::string& theirs) {
    if (ours == theirs) return;
    const auto it = cfg.origin.find(key);
    throw config::ConfigError("config key '" + key + "' = '" + ours + "' (" +
                              (it == cfg.origin.end() ? std::string("default") : it->second) + ") but " + manifest_path +
                              " records '" + theirs + "': the shards were made for " +
                              (manifest.directions.empty() ? manifest.src_lang + "->" + manifest.tgt_lang
                                                           : std::string("data.lang_tag ") + data::lang_tag_name(manifest.lang_tag)) +
                              " (set the key to match, or preprocess again)");
  };
  const std::string ours = directions_text(cfg.data), theirs = manifest_directions_text(manifest);
  if (ours != theirs)
    throw config::ConfigError("config key 'data.directions' = " + ours + " but " + manifest_path + " records " + theirs +
                              ": the shards were made for " + (theirs == "[]" ? "one direction" : "other directions") +
                              " (set the key to match, or preprocess again)");
  if (!cfg.data.directions.empty()) {  // src_lang / tgt_lang choose among the directions (eval/translator.cpp)
    check("data.lang_tag", data::lang_tag_name(cfg.data.lang_tag), data::lang_tag_name(manifest.lang_tag));
    return;
  }
  check("data.src_lang", cfg.data.src_lang, manifest.src_lang);
  check("data.tgt_lang", cfg.data.tgt_lang, manifest.tgt_lang);
}

void check_same_directions(const Checkpoint& ckpt, const data::DataConfig& now, const std::string& what) {
  const std::optional<config::Config> stored = stored_config(ckpt, what);
  if (!stored) return;
  const data::DataConfig& then = stored->data;
  const std::string was = directions_text(then), is = directions_text(now);
  const auto kind = [](const std::string& dirs) { return dirs == "[]" ? std::string("bilingual") : "multilingual " + dirs; };
  if (was != is)
    throw CheckpointError(what + ": a " + kind(was) + " model (data.directions), but the config is " + kind(is) +
                          ": use the config it was trained with" +
                          (was == "[]" || is == "[]" ? "" : " (a run that changes its directions starts anew, or "
                                                            "fine-tunes with train.finetune_from)"));
  if (then.lang_tag != now.lang_tag)
    throw CheckpointError(what + ": trained with data.lang_tag=" + data::lang_tag_name(then.lang_tag) + ", but the config has " +
                          data::lang_tag_name(now.lang_tag) + " (the model would not find its language tags where it learnt them)");
}

model::ModelConfig model_config_for(const config::Config& cfg, const data::Manifest& manifest) {
  check_config_against_manifest(cfg, manifest);
  return with_vocabulary(cfg.model, manifest);
}

void check_vocabulary(const Checkpoint& ckpt, const std::string& what, const data::Manifest& manifest) {
  if (ckpt.vocab_sha256 != manifest.spm_sha256)
    throw CheckpointError(what + ": field 'vocab_sha256' (" + ckpt.vocab_sha256.substr(0, 12) +
                          "...) differs from the vocabulary of data.shard_dir (" + manifest.spm_sha256.substr(0, 12) +
                          "...): the checkpoint was trained on other data");
}

void check_same_computation(const Checkpoint& ckpt, const model::ModelConfig& configured, const std::string& what) {
  const std::optional<config::Config> stored = stored_config(ckpt, what);
  if (!stored) return;
  const model::ModelConfig& then = stored->model;
  const auto refuse = [&](const std::string& key, const std::string& was, const std::string& is) {
    throw CheckpointError(what + ": trained with model." + key + "=" + was + ", but the configured model has " + is +
                          " (the weights would load and compute something else; set model." + key + "=" + was + ")");
  };
  const auto text = [](bool b) { return std::string(b ? "true" : "false"); };
  if (then.heads != configured.heads) refuse("heads", std::to_string(then.heads), std::to_string(configured.heads));
  if (then.fix_norm != configured.fix_norm) refuse("fix_norm", text(then.fix_norm), text(configured.fix_norm));
  // The activation has no parameters either: a GELU model configured as ReLU loads and computes otherwise.
  const auto name = [](model::Activation a) {
    return std::string(a == model::Activation::kRelu ? "relu" : a == model::Activation::kGelu ? "gelu" : "silu");
  };
  if (then.activation != configured.activation) refuse("activation", name(then.activation), name(configured.activation));
}

model::Transformer load_model_for_inference(const config::Config& cfg, const data::Manifest& manifest,
                                            const std::string& checkpoint_path, const torch::Device& device) {
  Checkpoint ckpt = load_checkpoint(checkpoint_path);
  check_same_directions(ckpt, cfg.data, checkpoint_path);  // first: it says why the vocabularies differ
  check_vocabulary(ckpt, checkpoint_path, manifest);
  const model::ModelConfig model_cfg = model_config_for(cfg, manifest);
  check_same_computation(ckpt, model_cfg, checkpoint_path);
  runtime::check_fits(model_cfg, cfg, device, /*training=*/false);
  return inference_model(model_cfg, ckpt, checkpoint_path, device);
}

model::Transformer load_channel_model(const data::Manifest& manifest, const std::string& checkpoint_path,
                                      const torch::Device& device) {
  const std::string what = "eval.channel_checkpoint " + checkpoint_path;
  Checkpoint ckpt = load_checkpoint(checkpoint_path);
  check_vocabulary(ckpt, what, manifest);
  const config::Config own = config::load_stored_config(ckpt.config_yaml, checkpoint_path + " (its config)");
  if (own.data.src_lang != manifest.tgt_lang || own.data.tgt_lang != manifest.src_lang)
    throw CheckpointError(what + ": trained for " + own.data.src_lang + "->" + own.data.tgt_lang +
                          ", but the channel of " + manifest.src_lang + "->" + manifest.tgt_lang +
                          " decoding must translate " + manifest.tgt_lang + "->" + manifest.src_lang);
  return inference_model(with_vocabulary(own.model, manifest), ckpt, what, device);
}

}  // namespace nmt::checkpoint
