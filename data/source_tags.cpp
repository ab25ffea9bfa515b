#include "data/source_tags.h"

#include <set>

#include "data/data_error.h"

namespace nmt::data {
namespace {

// The language tags of the directions' target languages (data.lang_tag source or decoder).
std::set<std::string> language_tags(const DataConfig& cfg) {
  std::set<std::string> tags;
  if (cfg.lang_tag == LangTag::kNone) return tags;
  for (const Direction& d : cfg.directions) tags.insert(language_tag(d.tgt));
  return tags;
}

}  // namespace

std::vector<std::string> reserved_symbols(const DataConfig& cfg) {
  std::set<std::string> tags = language_tags(cfg);
  for (const auto& [corpus, tag] : cfg.source_tags) tags.insert(tag);
  return {tags.begin(), tags.end()};
}

void check_reserved_symbols(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg,
                            const std::string& model_source) {
  const std::set<std::string> lang = language_tags(cfg);
  for (const std::string& tag : reserved_symbols(cfg)) {
    const std::string key = lang.count(tag) ? "data.lang_tag" : "data.source_tags";
    const int id = sp.PieceToId(tag);
    if (id == sp.unk_id())
      throw DataError(key + ": '" + tag + "' is not a symbol of the SentencePiece model (" + model_source +
                      "): train the vocabulary with the tags configured (leave data.spm_model empty), which makes "
                      "each a control symbol");
    if (!sp.IsControl(id))
      throw DataError(key + ": '" + tag + "' is an ordinary piece of the SentencePiece model (" + model_source +
                      ", id " + std::to_string(id) + "): real text could encode to it. Choose a tag that is not in the " +
                      "vocabulary");
  }
}

std::vector<int> source_prefix(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg,
                               const std::string& corpus, const Direction* direction) {
  std::vector<int> prefix;
  if (direction != nullptr && cfg.lang_tag == LangTag::kSource) prefix.push_back(sp.PieceToId(language_tag(direction->tgt)));
  const auto it = cfg.source_tags.find(corpus);
  if (it != cfg.source_tags.end()) prefix.push_back(sp.PieceToId(it->second));
  return prefix;
}

int decoder_start(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg, const Direction* direction) {
  if (direction == nullptr || cfg.lang_tag != LangTag::kDecoder) return -1;
  return sp.PieceToId(language_tag(direction->tgt));
}

const std::vector<int>& with_prefix(const std::vector<int>& ids, const std::vector<int>& prefix, std::vector<int>& scratch) {
  if (prefix.empty()) return ids;
  scratch = prefix;
  scratch.insert(scratch.end(), ids.begin(), ids.end());
  return scratch;
}

}  // namespace nmt::data
