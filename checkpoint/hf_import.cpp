#include "checkpoint/hf_import.h"

#include <sentencepiece_processor.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/safetensors.h"
#include "data/tokenizer.h"

namespace nmt::checkpoint {
namespace fs = std::filesystem;
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CheckpointError(path + ": missing or unreadable");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    throw CheckpointError(path + ": not JSON");
  }
}

// A key of config.json, refused by name when absent or of another type.
template <typename T>
T key(const nlohmann::json& cfg, const std::string& name, const std::string& path, std::optional<T> fallback = {}) {
  if (!cfg.contains(name) || cfg[name].is_null()) {
    if (fallback) return *fallback;
    throw CheckpointError(path + ": lacks key '" + name + "'");
  }
  try {
    return cfg[name].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw CheckpointError(path + ": key '" + name + "' has the wrong type");
  }
}

model::Activation activation_of(const std::string& name, const std::string& path) {
  if (name == "relu") return model::Activation::kRelu;
  if (name == "gelu") return model::Activation::kGelu;
  if (name == "silu" || name == "swish") return model::Activation::kSilu;
  throw CheckpointError(path + ": activation_function '" + name + "' is not supported (relu, gelu, silu / swish are)");
}

// config.json -> our architecture; anything our model cannot compute is refused here.
model::ModelConfig architecture(const nlohmann::json& cfg, const std::string& path) {
  const auto type = key<std::string>(cfg, "model_type", path);
  if (type != "marian" && type != "pegasus")
    throw CheckpointError(path + ": model_type '" + type +
                          "' is not supported: train.finetune_from takes Marian (OPUS-MT) or Pegasus-layout models");
  model::ModelConfig m;
  m.pre_norm = type == "pegasus";
  m.vocab_size = key<int64_t>(cfg, "vocab_size", path);
  m.pad_id = key<int64_t>(cfg, "pad_token_id", path);
  m.d_model = key<int64_t>(cfg, "d_model", path);
  m.encoder_layers = key<int64_t>(cfg, "encoder_layers", path);
  m.decoder_layers = key<int64_t>(cfg, "decoder_layers", path);
  m.heads = key<int64_t>(cfg, "encoder_attention_heads", path);
  m.ffn_dim = key<int64_t>(cfg, "encoder_ffn_dim", path);
  m.max_positions = key<int64_t>(cfg, "max_position_embeddings", path);
  m.activation = activation_of(key<std::string>(cfg, "activation_function", path), path);
  const auto refuse_unless = [&](bool ok, const std::string& why) {
    if (!ok) throw CheckpointError(path + ": " + why + ", which our model does not compute");
  };
  refuse_unless(key<int64_t>(cfg, "decoder_attention_heads", path) == m.heads, "encoder and decoder head counts differ");
  refuse_unless(key<int64_t>(cfg, "decoder_ffn_dim", path) == m.ffn_dim, "encoder and decoder FFN widths differ");
  refuse_unless(key<bool>(cfg, "scale_embedding", path, false), "scale_embedding is false (ours are scaled by sqrt(d_model))");
  refuse_unless(key<bool>(cfg, "tie_word_embeddings", path, true), "tie_word_embeddings is false");
  refuse_unless(key<bool>(cfg, "share_encoder_decoder_embeddings", path, true), "the encoder and decoder embeddings differ");
  refuse_unless(key<int64_t>(cfg, "decoder_vocab_size", path, m.vocab_size) == m.vocab_size, "decoder_vocab_size differs");
  refuse_unless(!key<bool>(cfg, "normalize_embedding", path, false), "normalize_embedding is set");
  refuse_unless(key<bool>(cfg, "static_position_embeddings", path, true), "positions are learned");
  return m;
}

// Their feature k is our feature kOrder[k] (tools/hf_layout.py's feature_order); we need the inverse.
torch::Tensor our_feature_order(int64_t d) {
  const auto order = torch::cat({torch::arange(0, d, 2), torch::arange(1, d, 2)});
  return torch::argsort(order);
}

// How a tensor's axes meet the residual stream (tools/hf_layout.py's kinds).
enum class Axis { kReads, kWrites, kKeeps };

struct Mapper {
  const std::map<std::string, torch::Tensor>& theirs;
  const std::string& path;
  torch::Tensor back;  // our_feature_order(d)
  int64_t d;
  c10::Dict<std::string, torch::Tensor> ours;

  torch::Tensor take(const std::string& name) const {
    const auto it = theirs.find(name);
    if (it == theirs.end()) throw CheckpointError(path + ": lacks tensor '" + name + "'");
    return it->second;
  }
  // Their weight and bias of projection `name`, in our feature order.
  std::pair<torch::Tensor, torch::Tensor> linear(const std::string& name, Axis weight_axis, bool stream_bias) const {
    torch::Tensor w = take(name + ".weight"), b = take(name + ".bias");
    if (weight_axis == Axis::kReads) w = w.index_select(1, back);
    if (weight_axis == Axis::kWrites) w = w.index_select(0, back);
    if (stream_bias) b = b.index_select(0, back);
    return {w, b};
  }
  // Our fused projection `our` from their projections `parts` (q, k, v...); the key bias dropped.
  void fused(const std::string& our, const std::string& their, const std::string& parts) {
    std::vector<torch::Tensor> ws, bs;
    for (char p : parts) {
      auto [w, b] = linear(their + "." + p + "_proj", Axis::kReads, false);
      ws.push_back(w);
      bs.push_back(p == 'k' ? torch::zeros_like(b) : b);
    }
    ours.insert(our + ".weight", torch::cat(ws).contiguous());
    ours.insert(our + ".bias", torch::cat(bs).contiguous());
  }
  void plain(const std::string& our, const std::string& their, Axis axis) {
    auto [w, b] = linear(their, axis, axis == Axis::kWrites);
    ours.insert(our + ".weight", w.contiguous());
    ours.insert(our + ".bias", b.contiguous());
  }
  void norm(const std::string& our, const std::string& their) {
    ours.insert(our + ".weight", take(their + ".weight").index_select(0, back).contiguous());
    ours.insert(our + ".bias", take(their + ".bias").index_select(0, back).contiguous());
  }
};

void map_layer(Mapper& m, const std::string& side, int64_t i) {
  const std::string our = side + "_layers." + std::to_string(i), their = "model." + side + ".layers." + std::to_string(i);
  m.fused(our + ".self_attn.in_proj", their + ".self_attn", "qkv");
  m.plain(our + ".self_attn.out_proj", their + ".self_attn.out_proj", Axis::kWrites);
  m.norm(our + ".norm1", their + ".self_attn_layer_norm");
  std::string ffn_norm = our + ".norm2";
  if (side == "decoder") {
    m.fused(our + ".cross_attn.q_proj", their + ".encoder_attn", "q");
    m.fused(our + ".cross_attn.kv_proj", their + ".encoder_attn", "kv");
    m.plain(our + ".cross_attn.out_proj", their + ".encoder_attn.out_proj", Axis::kWrites);
    m.norm(our + ".norm2", their + ".encoder_attn_layer_norm");
    ffn_norm = our + ".norm3";
  }
  m.plain(our + ".ffn.fc1", their + ".fc1", Axis::kReads);
  m.plain(our + ".ffn.fc2", their + ".fc2", Axis::kWrites);
  m.norm(ffn_norm, their + ".final_layer_norm");
}

// Their shared embedding: "model.shared.weight", or (some Marian exports) the encoder's copy.
torch::Tensor shared_embedding(const Mapper& m) {
  for (const char* name : {"model.shared.weight", "model.encoder.embed_tokens.weight"})
    if (m.theirs.count(name)) return m.theirs.at(name);
  throw CheckpointError(m.path + ": lacks tensor 'model.shared.weight'");
}

}  // namespace

bool is_hf_model_dir(const std::string& path) {
  return fs::is_directory(path) && fs::exists(fs::path(path) / "config.json");
}

HfModel read_hf_model(const std::string& dir) {
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const std::string weights_path = (fs::path(dir) / "model.safetensors").string();
  const nlohmann::json cfg = read_json(config_path);
  if (!cfg.is_object()) throw CheckpointError(config_path + ": not a JSON object (not a transformers model?)");
  HfModel hf;
  hf.config = architecture(cfg, config_path);
  hf.eos_id = key<int64_t>(cfg, "eos_token_id", config_path);
  hf.decoder_start_id = key<int64_t>(cfg, "decoder_start_token_id", config_path);
  if (!fs::is_regular_file(weights_path))
    throw CheckpointError(weights_path + ": missing (train.finetune_from reads a transformers model's safetensors weights)");
  const auto theirs = read_safetensors(weights_path);
  const int64_t d = hf.config.d_model;
  Mapper m{theirs, weights_path, our_feature_order(d), d, c10::Dict<std::string, torch::Tensor>()};
  const torch::Tensor embed = shared_embedding(m);
  if (embed.dim() != 2 || embed.size(0) != hf.config.vocab_size || embed.size(1) != d)
    throw CheckpointError(weights_path + ": the embedding is not [vocab_size, d_model] = [" +
                          std::to_string(hf.config.vocab_size) + ", " + std::to_string(d) + "] as config.json says");
  m.ours.insert("embed.weight", embed.index_select(1, m.back).contiguous());
  for (int64_t i = 0; i < hf.config.encoder_layers; ++i) map_layer(m, "encoder", i);
  for (int64_t i = 0; i < hf.config.decoder_layers; ++i) map_layer(m, "decoder", i);
  if (hf.config.pre_norm) {
    m.norm("encoder_norm", "model.encoder.layer_norm");
    m.norm("decoder_norm", "model.decoder.layer_norm");
  }
  const auto bias = theirs.find("final_logits_bias");
  hf.config.output_bias = bias != theirs.end() && bias->second.ne(0).any().item<bool>();
  if (hf.config.output_bias) m.ours.insert("output_bias", bias->second.reshape({-1}).contiguous());
  hf.weights = m.ours;
  return hf;
}

}  // namespace nmt::checkpoint

namespace nmt::checkpoint {
namespace {

std::string activation_name(model::Activation a) {
  return a == model::Activation::kRelu ? "relu" : a == model::Activation::kGelu ? "gelu" : "silu";
}

// The model keys of the run's config that must be the import's; each refusal names the key.
void check_model_section(const model::ModelConfig& hf, const model::ModelConfig& configured, const std::string& dir) {
  const auto refuse_unless = [&](bool same, const std::string& key, const std::string& theirs, const std::string& ours) {
    if (!same)
      throw CheckpointError("train.finetune_from " + dir + ": the model there has model." + key + "=" + theirs +
                            ", but the configured model has " + ours + " (set model." + key + "=" + theirs + ")");
  };
  const auto num = [](int64_t v) { return std::to_string(v); };
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  refuse_unless(hf.d_model == configured.d_model, "d_model", num(hf.d_model), num(configured.d_model));
  refuse_unless(hf.ffn_dim == configured.ffn_dim, "ffn_dim", num(hf.ffn_dim), num(configured.ffn_dim));
  refuse_unless(hf.heads == configured.heads, "heads", num(hf.heads), num(configured.heads));
  refuse_unless(hf.encoder_layers == configured.encoder_layers, "encoder_layers", num(hf.encoder_layers),
                num(configured.encoder_layers));
  refuse_unless(hf.decoder_layers == configured.decoder_layers, "decoder_layers", num(hf.decoder_layers),
                num(configured.decoder_layers));
  refuse_unless(hf.pre_norm == configured.pre_norm, "pre_norm", flag(hf.pre_norm), flag(configured.pre_norm));
  refuse_unless(hf.activation == configured.activation, "activation", activation_name(hf.activation),
                activation_name(configured.activation));
  refuse_unless(!hf.output_bias || configured.output_bias, "output_bias", "true", "false");
  refuse_unless(configured.norm == model::NormKind::kLayer, "norm", "layer", "scale");
  refuse_unless(!configured.fix_norm, "fix_norm", "false", "true");
}

// vocab.json (MarianTokenizer's piece -> id) must give every piece of the shards' SentencePiece
// model its own id: then the shards' ids are the model's ids.
void check_vocab_json(const std::string& dir, const data::Manifest& manifest, const std::string& shard_dir) {
  const std::string path = (fs::path(dir) / "vocab.json").string();
  if (!fs::exists(path)) return;  // weights alone: the size and special ids are all there is to check
  if (!manifest.vocab_json.empty()) {  // shards made with data.hf_tokenizer: the same three files
    const auto in_dir = [&](const char* name) { return (fs::path(dir) / name).string(); };
    for (const char* name : {"source.spm", "target.spm"})
      if (!fs::exists(in_dir(name))) throw CheckpointError(in_dir(name) + ": missing beside vocab.json");
    if (data::marian_vocabulary_sha256(in_dir("source.spm"), in_dir("target.spm"), path) != manifest.spm_sha256)
      throw CheckpointError(dir + ": its source.spm, target.spm and vocab.json differ from those " + shard_dir +
                            " was made with (preprocess with data.hf_tokenizer set to this directory)");
    return;
  }
  const nlohmann::json vocab = read_json(path);
  const std::string spm_path = (fs::path(shard_dir) / manifest.spm_model).string();
  sentencepiece::SentencePieceProcessor sp;
  if (!sp.Load(spm_path).ok()) throw CheckpointError(spm_path + ": cannot load the SentencePiece model");
  if (!vocab.is_object() || static_cast<int64_t>(vocab.size()) != sp.GetPieceSize())
    throw CheckpointError(path + ": " + std::to_string(vocab.size()) + " pieces, but the shards' SentencePiece model " +
                          spm_path + " has " + std::to_string(sp.GetPieceSize()) + ": not the tokenizer of these shards");
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    const std::string& piece = sp.IdToPiece(id);
    if (!vocab.contains(piece) || !vocab[piece].is_number_integer() || vocab[piece].get<int64_t>() != id)
      throw CheckpointError(path + ": piece '" + piece + "' has id " +
                            (vocab.contains(piece) ? vocab[piece].dump() : std::string("none")) + " there but " +
                            std::to_string(id) + " in " + spm_path +
                            ": vocab.json does not match the SentencePiece model the shards were made with "
                            "(preprocess with data.hf_tokenizer set to the model's directory)");
  }
}

}  // namespace

void check_hf_model(const HfModel& hf, const model::ModelConfig& configured, const data::Manifest& manifest,
                    const std::string& shard_dir, const std::string& dir) {
  const std::string what = "train.finetune_from " + dir;
  if (hf.config.vocab_size != manifest.vocab_size)
    throw CheckpointError(what + ": its vocabulary has " + std::to_string(hf.config.vocab_size) +
                          " pieces, the shards' " + std::to_string(manifest.vocab_size) +
                          ": preprocess with the model's tokenizer (data.hf_tokenizer set to its directory)");
  const auto same_id = [&](const char* name, int64_t theirs, int64_t ours) {
    if (theirs != ours)
      throw CheckpointError(what + ": config.json's " + name + " is " + std::to_string(theirs) + ", the shards' is " +
                            std::to_string(ours) + " (another tokenizer?)");
  };
  same_id("pad_token_id", hf.config.pad_id, manifest.special.pad);
  same_id("eos_token_id", hf.eos_id, manifest.special.eos);
  same_id("decoder_start_token_id (our BOS)", hf.decoder_start_id, manifest.special.bos);
  check_model_section(hf.config, configured, dir);
  check_vocab_json(dir, manifest, shard_dir);
}

}  // namespace nmt::checkpoint
