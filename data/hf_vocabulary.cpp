#include "data/hf_vocabulary.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "data/data_error.h"

namespace nmt::data {
namespace fs = std::filesystem;
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": missing or unreadable (data.hf_tokenizer needs MarianTokenizer's files)");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int64_t id_key(const nlohmann::json& cfg, const char* key, const std::string& path, int64_t size) {
  if (!cfg.contains(key) || !cfg[key].is_number_integer())
    throw DataError(path + ": key '" + key + "' is missing or not an integer");
  const auto id = cfg[key].get<int64_t>();
  if (id < 0 || id >= size)
    throw DataError(path + ": key '" + key + "' = " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(size) + " pieces (vocab.json)");
  return id;
}

}  // namespace

ShardVocabulary hf_vocabulary(const DataConfig& cfg) {
  const auto in_dir = [&](const char* name) { return (fs::path(cfg.hf_tokenizer) / name).string(); };
  const std::string config_path = in_dir("config.json");
  nlohmann::json model;
  try {
    model = nlohmann::json::parse(read_bytes(config_path));
  } catch (const nlohmann::json::exception&) {
    throw DataError(config_path + ": not JSON");
  }
  ShardVocabulary v{Tokenizer::marian(in_dir("source.spm"), in_dir("target.spm"), in_dir("vocab.json")), Manifest{}, {}};
  const int64_t size = v.tokenizer.size();
  if (model.contains("vocab_size") && model["vocab_size"] != size)
    throw DataError(config_path + ": vocab_size " + model["vocab_size"].dump() + " (the weights') differs from the " +
                    std::to_string(size) + " pieces of " + in_dir("vocab.json"));
  Manifest& m = v.manifest;
  m.src_lang = cfg.src_lang;
  m.tgt_lang = cfg.tgt_lang;
  m.spm_model = "source.spm";
  m.target_spm_model = "target.spm";
  m.vocab_json = "vocab.json";
  m.spm_sha256 = marian_vocabulary_sha256(in_dir("source.spm"), in_dir("target.spm"), in_dir("vocab.json"));
  m.vocab_size = size;
  // The decoder's start token is our BOS: Marian's is its pad.
  m.special = {id_key(model, "pad_token_id", config_path, size), v.tokenizer.unk_id(),
               id_key(model, "decoder_start_token_id", config_path, size), id_key(model, "eos_token_id", config_path, size)};
  for (const char* name : {"source.spm", "target.spm", "vocab.json"}) v.files.emplace_back(name, read_bytes(in_dir(name)));
  return v;
}

}  // namespace nmt::data
