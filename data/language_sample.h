#pragma once
// The lines a multilingual model's joint SentencePiece model trains on: each language's share
// of data.spm_sample_lines is proportional to its lines^(1/T) (data.spm_temperature T; 0: equal
// shares), as XLM and mBART sample their vocabularies' text, so that a small language keeps its
// pieces. A language with fewer lines than its share has them repeated (SentencePiece counts
// frequencies, so repeating a line is upsampling it).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nmt::data {

struct LanguageText {
  std::vector<std::string> files;  // its raw files, each read once
  int64_t lines = 0;               // their lines in all
};

// Each language's share of `budget` lines (at most the lines there are in all), by `temperature`.
std::map<std::string, int64_t> language_shares(const std::map<std::string, LanguageText>& languages, int64_t budget,
                                               double temperature);

// The sampled lines, language by language in code order; a seeded reservoir sample of each
// language's non-empty lines (the same input always gives the same lines).
std::vector<std::string> sample_languages(const std::map<std::string, LanguageText>& languages,
                                          const std::map<std::string, int64_t>& shares);

}  // namespace nmt::data
