#pragma once
// A uniform sample of at most `capacity` items from a stream of unknown length, in one pass and
// O(capacity) memory (Vitter's Algorithm R), drawn with SplitMix64 from a fixed seed, so the
// same stream always gives the same sample. preprocess trains SentencePiece on such a sample of
// the training lines (data.spm_sample_lines), as Marian does (--sentencepiece-max-lines).
#include <cstdint>
#include <vector>

#include "base/splitmix64.h"

namespace nmt::data {

class ReservoirSample {
 public:
  ReservoirSample(uint64_t capacity, uint64_t seed) : capacity_(capacity), rng_{seed} {}

  // Offers the next item of the stream (its index is the number offered before it).
  void offer();
  uint64_t offered() const { return offered_; }
  // The indices kept, ascending: every item while no more than `capacity` were offered.
  std::vector<uint64_t> chosen() const;

 private:
  uint64_t capacity_;
  base::SplitMix64 rng_;
  uint64_t offered_ = 0;
  std::vector<uint64_t> kept_;
};

}  // namespace nmt::data
