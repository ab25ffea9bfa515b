#include "data/manifest.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/sha256.h"
#include "data/data_error.h"
#include "data/tokenizer.h"

namespace nmt::data {
namespace {

using nlohmann::json;

const json& field(const json& obj, const char* key, const std::string& where, const std::string& path) {
  if (!obj.is_object() || !obj.contains(key))
    throw DataError(path + ": missing field '" + where + key + "'");
  return obj.at(key);
}

int64_t int_field(const json& obj, const char* key, const std::string& where, const std::string& path) {
  const json& v = field(obj, key, where, path);
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    throw DataError(path + ": field '" + where + key + "' must be a non-negative integer, got " + v.dump());
  return v.get<int64_t>();
}

std::string str_field(const json& obj, const char* key, const std::string& where, const std::string& path) {
  const json& v = field(obj, key, where, path);
  if (!v.is_string()) throw DataError(path + ": field '" + where + key + "' must be a string, got " + v.dump());
  return v.get<std::string>();
}

// A multilingual manifest's "directions" and "lang_tag" (absent: a bilingual one).
void read_directions(const json& j, const std::string& path, Manifest& m) {
  if (!j.contains("directions")) return;
  const json& dirs = j.at("directions");
  if (!dirs.is_array()) throw DataError(path + ": field 'directions' must be an array of strings");
  for (size_t i = 0; i < dirs.size(); ++i) {
    if (!dirs[i].is_string()) throw DataError(path + ": field 'directions[" + std::to_string(i) + "]' must be a string");
    m.directions.push_back(dirs[i].get<std::string>());
  }
  const std::string tag = str_field(j, "lang_tag", "", path);
  if (!parse_lang_tag(tag, m.lang_tag))
    throw DataError(path + ": field 'lang_tag' = '" + tag + "' is none of none, source, decoder");
}

// A split's counts, and a multilingual split's direction and decoder start (within the vocabulary).
SplitEntry split_counts(const json& s, const std::string& where, const std::string& path, int64_t vocab_size) {
  SplitEntry e;
  e.examples = int_field(s, "examples", where, path);
  e.raw_lines = int_field(s, "raw_lines", where, path);
  e.skipped_empty = int_field(s, "skipped_empty", where, path);
  e.skipped_too_long = int_field(s, "skipped_too_long", where, path);
  if (s.contains("direction")) e.direction = str_field(s, "direction", where, path);
  if (s.contains("decoder_start")) {
    e.decoder_start = int_field(s, "decoder_start", where, path);
    if (e.decoder_start >= vocab_size)
      throw DataError(path + ": field '" + where + "decoder_start' = " + std::to_string(e.decoder_start) +
                      " is outside the vocabulary of " + std::to_string(vocab_size));
  }
  return e;
}

}  // namespace

std::string Manifest::to_json() const {
  json j;
  j["format_version"] = format_version;
  j["src_lang"] = src_lang;
  j["tgt_lang"] = tgt_lang;
  j["spm_model"] = spm_model;
  j["spm_sha256"] = spm_sha256;
  if (!vocab_json.empty()) {
    j["target_spm_model"] = target_spm_model;
    j["vocab_json"] = vocab_json;
  }
  j["vocab_size"] = vocab_size;
  j["special_ids"] = {{"pad", special.pad}, {"unk", special.unk}, {"bos", special.bos}, {"eos", special.eos}};
  if (!directions.empty()) {
    j["directions"] = directions;
    j["lang_tag"] = lang_tag_name(lang_tag);
  }
  json splits_json = json::object();
  for (const auto& [name, s] : splits) {
    json shards = json::array();
    for (const auto& sh : s.shards) shards.push_back({{"file", sh.file}, {"examples", sh.examples}, {"sha256", sh.sha256}});
    splits_json[name] = {{"examples", s.examples},
                         {"raw_lines", s.raw_lines},
                         {"skipped_empty", s.skipped_empty},
                         {"skipped_too_long", s.skipped_too_long},
                         {"shards", shards}};
    if (!s.direction.empty()) splits_json[name]["direction"] = s.direction;
    if (s.decoder_start >= 0) splits_json[name]["decoder_start"] = s.decoder_start;
  }
  j["splits"] = splits_json;
  return j.dump(2) + "\n";
}

Manifest Manifest::from_json(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse errors, and numbers out of range (found by fuzz_readers)
    throw DataError(path + ": not valid JSON: " + e.what());
  }
  Manifest m;
  m.format_version = int_field(j, "format_version", "", path);
  if (m.format_version != kManifestFormatVersion)
    throw DataError(path + ": field 'format_version' is " + std::to_string(m.format_version) +
                    ", this reader supports " + std::to_string(kManifestFormatVersion));
  m.src_lang = str_field(j, "src_lang", "", path);
  m.tgt_lang = str_field(j, "tgt_lang", "", path);
  m.spm_model = str_field(j, "spm_model", "", path);
  m.spm_sha256 = str_field(j, "spm_sha256", "", path);
  if (j.contains("vocab_json")) {
    m.vocab_json = str_field(j, "vocab_json", "", path);
    m.target_spm_model = str_field(j, "target_spm_model", "", path);
  }
  m.vocab_size = int_field(j, "vocab_size", "", path);
  const json& sp = field(j, "special_ids", "", path);
  m.special.pad = int_field(sp, "pad", "special_ids.", path);
  m.special.unk = int_field(sp, "unk", "special_ids.", path);
  m.special.bos = int_field(sp, "bos", "special_ids.", path);
  m.special.eos = int_field(sp, "eos", "special_ids.", path);
  for (auto [name, id] : {std::pair<const char*, int64_t>{"pad", m.special.pad}, {"unk", m.special.unk},
                          {"bos", m.special.bos}, {"eos", m.special.eos}})
    if (id >= m.vocab_size)
      throw DataError(path + ": field 'special_ids." + name + "' = " + std::to_string(id) +
                      " is outside the vocabulary of " + std::to_string(m.vocab_size));
  read_directions(j, path, m);
  const json& splits = field(j, "splits", "", path);
  if (!splits.is_object()) throw DataError(path + ": field 'splits' must be an object");
  for (const auto& [name, s] : splits.items()) {
    const std::string where = "splits." + name + ".";
    SplitEntry e = split_counts(s, where, path, m.vocab_size);
    const json& shards = field(s, "shards", where, path);
    if (!shards.is_array() || shards.empty()) throw DataError(path + ": field '" + where + "shards' must be a non-empty array");
    int64_t total = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
      const std::string w = where + "shards[" + std::to_string(i) + "].";
      ShardEntry sh{str_field(shards[i], "file", w, path), int_field(shards[i], "examples", w, path),
                    str_field(shards[i], "sha256", w, path)};
      total += sh.examples;
      e.shards.push_back(sh);
    }
    if (total != e.examples)
      throw DataError(path + ": field '" + where + "examples' = " + std::to_string(e.examples) +
                      " but its shards hold " + std::to_string(total));
    m.splits[name] = e;
  }
  return m;
}

std::string Manifest::vocabulary_sha256(const std::string& shard_dir) const {
  const auto in_dir = [&](const std::string& name) { return (std::filesystem::path(shard_dir) / name).string(); };
  for (const std::string& name : {spm_model, target_spm_model, vocab_json})
    if (!name.empty() && !std::filesystem::exists(in_dir(name)))
      throw DataError(in_dir(name) + ": vocabulary file named by the manifest is missing");
  if (vocab_json.empty()) return base::sha256_file(in_dir(spm_model));
  return marian_vocabulary_sha256(in_dir(spm_model), in_dir(target_spm_model), in_dir(vocab_json));
}

Manifest Manifest::load(const std::string& shard_dir) {
  const std::string path = (std::filesystem::path(shard_dir) / kManifestName).string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open manifest (run preprocess first?)");
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), path);
}

}  // namespace nmt::data
