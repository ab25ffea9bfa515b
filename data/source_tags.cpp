#include "data/source_tags.h"

#include <set>

#include "data/data_error.h"

namespace nmt::data {

std::vector<std::string> distinct_source_tags(const DataConfig& cfg) {
  std::set<std::string> tags;
  for (const auto& [corpus, tag] : cfg.source_tags) tags.insert(tag);
  return {tags.begin(), tags.end()};
}

void check_source_tags(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg,
                       const std::string& model_source) {
  for (const std::string& tag : distinct_source_tags(cfg)) {
    const int id = sp.PieceToId(tag);
    if (id == sp.unk_id())
      throw DataError("data.source_tags: '" + tag + "' is not a symbol of the SentencePiece model (" + model_source +
                      "): train the vocabulary with the tags configured (leave data.spm_model empty), which makes "
                      "each a control symbol");
    if (!sp.IsControl(id))
      throw DataError("data.source_tags: '" + tag + "' is an ordinary piece of the SentencePiece model (" +
                      model_source + ", id " + std::to_string(id) +
                      "): real text could encode to it. Choose a tag that is not in the vocabulary");
  }
}

int source_tag_id(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg, const std::string& split) {
  const auto it = cfg.source_tags.find(split);
  return it == cfg.source_tags.end() ? -1 : sp.PieceToId(it->second);
}

const std::vector<int>& with_source_tag(const std::vector<int>& ids, int tag, std::vector<int>& scratch) {
  if (tag < 0) return ids;
  scratch.assign(1, tag);
  scratch.insert(scratch.end(), ids.begin(), ids.end());
  return scratch;
}

}  // namespace nmt::data
