#pragma once
// The vocabulary preprocess writes into a shard directory: its files (name there -> bytes), the
// tokenizer that encodes with them, and the manifest's vocabulary fields. Either a SentencePiece
// model (trained, or data.spm_model), or a transformers model's Marian vocabulary
// (data.hf_tokenizer: source.spm, target.spm, vocab.json, with config.json's special ids), so
// that the shards' ids are that model's ids and train.finetune_from can start from it.
#include <string>
#include <utility>
#include <vector>

#include "data/data_config.h"
#include "data/manifest.h"
#include "data/tokenizer.h"

namespace nmt::data {

struct ShardVocabulary {
  Tokenizer tokenizer;
  Manifest manifest;  // languages, vocabulary fields and special ids; no splits yet
  std::vector<std::pair<std::string, std::string>> files;
};

// data.hf_tokenizer's directory. Refused, naming the file: missing MarianTokenizer files, a
// vocab.json that is not its .spm files' vocabulary, special ids outside it, a config.json
// vocab_size (the weights') that differs from vocab.json's.
ShardVocabulary hf_vocabulary(const DataConfig& cfg);

}  // namespace nmt::data
