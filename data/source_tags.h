#pragma once
// Source tags (tagged back-translation, Caswell et al. 2019): data.source_tags maps a training
// corpus to a tag, a reserved SentencePiece symbol put before every source sentence of that
// corpus, so that the model can tell synthetic sources from real ones. A tag is a *control*
// symbol of the SentencePiece model: never split, and never produced by encoding text (the
// text "<BT>" in real input encodes as ordinary pieces), and decoding never emits one
// (eval/translator.cpp bans every control symbol but EOS).
#include <sentencepiece_processor.h>

#include <string>
#include <vector>

#include "data/data_config.h"

namespace nmt::data {

// The distinct tags of data.source_tags, sorted: SentencePiece training's control_symbols.
std::vector<std::string> distinct_source_tags(const DataConfig& cfg);

// Each tag must be a control symbol of the model; throws DataError naming the tag, the model
// (`model_source`) and what is wrong: absent, or an ordinary piece that text could encode to.
void check_source_tags(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg,
                       const std::string& model_source);

// The tag's id for split `split` (a training corpus with a tag), else -1.
int source_tag_id(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg, const std::string& split);

// `ids` with `tag` in front (in `scratch`), or `ids` itself when tag < 0.
const std::vector<int>& with_source_tag(const std::vector<int>& ids, int tag, std::vector<int>& scratch);

}  // namespace nmt::data
