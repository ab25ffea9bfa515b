#pragma once
// The reserved symbols put in front of a source sentence, or given to the decoder first:
// - source tags (tagged back-translation, Caswell et al. 2019): data.source_tags maps a training
//   corpus to a tag, so that the model can tell synthetic sources from real ones;
// - language tags (data.lang_tag, a multilingual model): "<2de>" names the target language, in
//   front of the source (source) or as the decoder's first token in place of BOS (decoder).
// Each is a *control* symbol of the SentencePiece model: never split, and never produced by
// encoding text (the text "<BT>" in real input encodes as ordinary pieces), and decoding never
// emits one (eval/translator.cpp bans every control symbol but EOS).
#include <sentencepiece_processor.h>

#include <string>
#include <vector>

#include "data/data_config.h"

namespace nmt::data {

// The distinct source tags and language tags, sorted: SentencePiece training's control_symbols.
std::vector<std::string> reserved_symbols(const DataConfig& cfg);

// Each reserved symbol must be a control symbol of the model; throws DataError naming the key,
// the symbol, the model (`model_source`) and what is wrong: absent, or an ordinary piece that
// text could encode to.
void check_reserved_symbols(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg,
                            const std::string& model_source);

// What goes in front of every source sentence of training corpus `corpus` (a data.train_corpora
// name; "" for a split that is no training corpus) in `direction` (null: a bilingual model): the
// language tag under data.lang_tag: source, then the corpus's source tag. Empty: nothing.
std::vector<int> source_prefix(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg,
                               const std::string& corpus, const Direction* direction);

// The decoder's first token for `direction` under data.lang_tag: decoder (its language tag),
// else -1 (BOS).
int decoder_start(const sentencepiece::SentencePieceProcessor& sp, const DataConfig& cfg, const Direction* direction);

// `ids` with `prefix` in front (in `scratch`), or `ids` itself when the prefix is empty.
const std::vector<int>& with_prefix(const std::vector<int>& ids, const std::vector<int>& prefix, std::vector<int>& scratch);

}  // namespace nmt::data
