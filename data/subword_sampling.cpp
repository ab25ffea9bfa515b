#include "data/subword_sampling.h"

#include <algorithm>
#include <cmath>

#include "base/fnv1a.h"
#include "data/data_error.h"

namespace nmt::data {
namespace {

// splitmix64's finaliser: a well-mixed 64-bit value from any key.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A uniform draw in [0, 1) with 53 random bits, the same on every platform.
double unit_draw(uint64_t key) { return static_cast<double>(mix64(key) >> 11) * 0x1.0p-53; }

}  // namespace

uint64_t line_key(const std::string& split, int64_t line, int side) {
  return mix64(base::fnv1a(split) ^ mix64(static_cast<uint64_t>(line) * 2 + static_cast<uint64_t>(side)));
}

std::vector<std::vector<int>> sample_segmentations(const sentencepiece::SentencePieceProcessor& sp,
                                                   const std::string& line, const SubwordSampling& sampling,
                                                   uint64_t key) {
  sentencepiece::ImmutableNBestSentencePieceText nbest;
  const auto status = sp.NBestEncode(line, static_cast<int>(sampling.nbest), nbest.mutable_proto());
  if (!status.ok())
    throw DataError("SentencePiece cannot give a line's n-best segmentations (" + status.ToString() +
                    "): data.subword_samples needs a unigram model (data.spm_model_type: unigram)");
  const auto n = static_cast<int>(nbest.nbests_size());
  if (n == 0) return std::vector<std::vector<int>>(static_cast<size_t>(sampling.count));  // an empty line
  // P(x)^alpha, relative to the best segmentation's (scores are log-probabilities, best first).
  std::vector<double> cumulative(static_cast<size_t>(n));
  const double best = nbest.nbests(0).score();
  double total = 0;
  for (int i = 0; i < n; ++i) {
    total += std::exp(sampling.alpha * (static_cast<double>(nbest.nbests(i).score()) - best));
    cumulative[static_cast<size_t>(i)] = total;
  }
  std::vector<std::vector<int>> out;
  for (int64_t k = 0; k < sampling.count; ++k) {
    const double u = unit_draw(key ^ mix64(static_cast<uint64_t>(k) + 1)) * total;
    const auto pick = std::min<int>(
        static_cast<int>(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin()), n - 1);
    const auto segmentation = nbest.nbests(pick);
    std::vector<int> ids;
    for (const auto& piece : segmentation.pieces()) ids.push_back(static_cast<int>(piece.id()));
    out.push_back(std::move(ids));
  }
  return out;
}

}  // namespace nmt::data
