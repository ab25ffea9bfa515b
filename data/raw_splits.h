#pragma once
// The raw splits preprocess reads (the {split}.{lang}[.gz] layout of data.raw_dir), found and
// checked before anything is written: one direction's (src_lang -> tgt_lang), or a multilingual
// model's, every split in each of data.directions.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/data_config.h"

namespace nmt::data {

// A shard split's raw files, and their line count once scanned. The lines themselves are
// streamed, never held: memory stays bounded by a block and a shard, whatever the corpus's size.
struct RawSplit {
  std::string name, src_path, tgt_path;
  int64_t lines = 0;
  std::string corpus;                  // its data.train_corpora name (data.source_tags' key); "" if none
  std::optional<Direction> direction;  // a multilingual model's split: its direction
};

// Every split present in both languages (of each direction), and the training and validation
// splits, which must be there: a missing file is one DataError listing every missing file. A
// bilingual split present in one language only is an error too; a multilingual model's other
// splits (test sets) are taken in the directions that have both files. Refuses a raw split
// named like a split preprocess derives (data.subword_samples, reversed_weight, concat_weight).
std::vector<RawSplit> find_raw_splits(const DataConfig& cfg);

// The key that names the training data, with its value, for messages.
std::string training_key(const DataConfig& cfg);

}  // namespace nmt::data
