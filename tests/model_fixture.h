#pragma once
// The Transformer fixtures of tests/fixtures (made by tests/make_model_fixtures.py with
// PyTorch's own Python ops): their weights, inputs and PyTorch's logits, and our model with
// their weights.
#include <torch/torch.h>

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "model/transformer.h"

namespace nmt::model {

inline c10::impl::GenericDict load_fixture(const std::string& name) {
  const std::string path = std::string(NMTRAIN_SOURCE_DIR) + "/tests/fixtures/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": fixture missing (run tests/make_model_fixtures.py)");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return torch::pickle_load(bytes).toGenericDict();
}

inline ModelConfig fixture_config(const c10::impl::GenericDict& f) {
  const auto c = f.at("config").toGenericDict();
  ModelConfig mc;
  mc.vocab_size = c.at("vocab").toInt();
  mc.d_model = c.at("d_model").toInt();
  mc.heads = c.at("heads").toInt();
  mc.ffn_dim = c.at("ffn_dim").toInt();
  mc.encoder_layers = c.at("encoder_layers").toInt();
  mc.decoder_layers = c.at("decoder_layers").toInt();
  mc.pad_id = c.at("pad").toInt();
  mc.max_positions = c.at("max_positions").toInt();
  mc.pre_norm = c.at("pre_norm").toInt() != 0;
  // Keys the first fixtures predate: LayerNorm, no FixNorm.
  if (c.contains("norm")) mc.norm = c.at("norm").toStringRef() == "scale" ? NormKind::kScale : NormKind::kLayer;
  if (c.contains("fix_norm")) mc.fix_norm = c.at("fix_norm").toInt() != 0;
  if (c.contains("activation")) {
    const std::string& a = c.at("activation").toStringRef();
    mc.activation = a == "gelu" ? Activation::kGelu : a == "silu" ? Activation::kSilu : Activation::kRelu;
  }
  if (c.contains("output_bias")) mc.output_bias = c.at("output_bias").toInt() != 0;
  mc.dropout = 0;
  return mc;
}

inline Transformer fixture_model(const c10::impl::GenericDict& f) {
  Transformer m(fixture_config(f));
  c10::Dict<std::string, torch::Tensor> w;
  for (const auto& kv : f.at("weights").toGenericDict()) w.insert(kv.key().toStringRef(), kv.value().toTensor());
  checkpoint::load_model_weights(*m, w, "fixture");
  m->eval();
  return m;
}

}  // namespace nmt::model
