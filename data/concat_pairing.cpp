#include "data/concat_pairing.h"

#include <sentencepiece_processor.h>

#include <numeric>
#include <stdexcept>

#include "base/fnv1a.h"
#include "base/splitmix64.h"
#include "data/data_error.h"

namespace nmt::data {

std::vector<int64_t> concat_partners(int64_t count, const std::string& split, int64_t block) {
  if (count < 0) throw std::invalid_argument("concat_partners: negative pair count " + std::to_string(count) + " for " + split);
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), int64_t{0});
  // An arbitrary salt and SplitMix64's golden-ratio step spread the blocks' keys apart. Both are
  // part of the shards' content: changing either re-pairs every train.concat.
  base::SplitMix64 rng{base::fnv1a(split) ^ (0xC0FFEEull + static_cast<uint64_t>(block) * 0x9E3779B97F4A7C15ull)};
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);  // Fisher-Yates
  std::vector<int64_t> partner(static_cast<size_t>(count));
  for (size_t j = 0; j < order.size(); ++j) partner[static_cast<size_t>(order[j])] = order[(j + 1) % order.size()];
  return partner;
}

std::vector<int> joined(const std::vector<int>& first, const std::vector<int>& second) {
  std::vector<int> out(first);
  out.insert(out.end(), second.begin(), second.end());
  return out;
}

void check_encodes_words_alone(const sentencepiece::SentencePieceProcessor& sp, const std::string& model_source) {
  static const std::string kWordStart = "\xe2\x96\x81";  // U+2581, SentencePiece's word-start mark
  const std::string why = model_source + ": data.concat_weight joins two lines' pieces, which needs a model that encodes "
                                         "each word alone (SentencePiece's defaults: split_by_whitespace, add_dummy_prefix); ";
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    const std::string& piece = sp.IdToPiece(id);
    if (!sp.IsControl(id) && piece.find(kWordStart, 1) != std::string::npos)
      throw DataError(why + "piece " + std::to_string(id) + " '" + piece + "' spans a word boundary");
  }
  std::vector<int> a, b, ab;
  if (!sp.Encode("a", &a).ok() || !sp.Encode("b", &b).ok() || !sp.Encode("a b", &ab).ok())
    throw DataError(model_source + ": SentencePiece cannot encode the probe 'a b'");
  if (joined(a, b) != ab) throw DataError(why + "'b' encodes differently alone than after 'a ' (no add_dummy_prefix?)");
}

}  // namespace nmt::data
