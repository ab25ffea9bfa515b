#pragma once
// Concatenation augmentation (Nguyen, Murray & Chiang 2021, "Data Augmentation by Concatenation
// for Low-Resource Translation: A Mystery and a Solution": about +1 BLEU on four low-resource
// pairs, from context and length diversity, not discourse). Under data.concat_weight, preprocess
// writes every training corpus a second time with each pair joined to another pair of the
// corpus: source to source, target to target.
//
// The partner is drawn within the block of lines preprocess holds anyway (data/preprocess.cpp),
// so memory stays bounded on a corpus of any size: the block's kept pairs are shuffled by a
// generator keyed on (split, block), and each is joined to the next in that order, the last to
// the first. Every pair is so the first half of one joined pair and the second half of another,
// never of itself (a block that keeps a single pair writes it alone), and the result does not
// depend on the number of encoding threads.
#include <sentencepiece_processor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nmt::data {

// partner[i] for each of `count` pairs: a single cycle through a shuffled order of 0..count-1,
// drawn from a generator keyed on (split, block). count 1 gives {0}.
std::vector<int64_t> concat_partners(int64_t count, const std::string& split, int64_t block);

// `first` followed by `second`: the encoding of the two lines joined by a space when the model
// encodes each word alone, as check_encodes_words_alone() makes sure.
std::vector<int> joined(const std::vector<int>& first, const std::vector<int>& second);

// Throws DataError naming `model_source` unless `sp` encodes a line word by word, each word's
// pieces starting with the word-start mark: then joining two lines' ids equals encoding the
// joined lines. SentencePiece's defaults do (split_by_whitespace, add_dummy_prefix); a model
// trained without either does not: no piece may hold the mark past its first character, and
// "a" and "b" must encode inside "a b" as they do alone.
void check_encodes_words_alone(const sentencepiece::SentencePieceProcessor& sp, const std::string& model_source);

}  // namespace nmt::data
