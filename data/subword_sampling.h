#pragma once
// Subword regularisation (Kudo 2018, "Subword Regularization"), done once at preprocessing:
// besides a training corpus's best segmentation, data.subword_samples more encodings of every
// line, each drawn from the line's data.subword_nbest best segmentations with probability
// proportional to P(x)^data.subword_alpha (the paper's l and alpha). Training reads them as
// further corpora, so the model meets each sentence cut into different pieces.
//
// Each draw comes from a generator keyed on (split, line, side, draw) alone, not from
// SentencePiece's per-thread one: the shards are the same for any number of workers.
#include <sentencepiece_processor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nmt::data {

struct SubwordSampling {
  int64_t count = 0;   // segmentations drawn per line (0: off)
  int64_t nbest = 64;  // drawn from this many best
  double alpha = 0.1;  // inverse temperature: 0 draws the n best uniformly, large values the best
};

// The key of line `line` (0-based) of side `side` (0 source, 1 target) of split `split`.
uint64_t line_key(const std::string& split, int64_t line, int side);

// `sampling.count` segmentations of `line` (piece ids), draw k from the generator keyed on
// (key, k). Throws DataError when SentencePiece cannot give n-best segmentations (only unigram
// models can).
std::vector<std::vector<int>> sample_segmentations(const sentencepiece::SentencePieceProcessor& sp,
                                                   const std::string& line, const SubwordSampling& sampling,
                                                   uint64_t key);

}  // namespace nmt::data
