#pragma once
// A uniform sample of at most `capacity` items from a stream of unknown length, in one pass and
// O(capacity) memory (Vitter's Algorithm R), drawn with SplitMix64 from a fixed seed, so the
// same stream always gives the same sample. preprocess trains SentencePiece on such a sample of
// the training lines (data.spm_sample_lines), as Marian does (--sentencepiece-max-lines).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/splitmix64.h"

namespace nmt::data {

class ReservoirSample {
 public:
  ReservoirSample(uint64_t capacity, uint64_t seed) : capacity_(capacity), rng_{seed} {}

  // Offers the next item of the stream (its index is the number offered before it). Returns the
  // slot it takes in the sample, in [0, capacity), which drops the item that held it, if any;
  // kNotKept when the item is not kept. A caller that keeps the items themselves stores them
  // by slot (see LineSample).
  static constexpr uint64_t kNotKept = ~uint64_t{0};
  uint64_t offer();
  uint64_t offered() const { return offered_; }
  // The indices kept, ascending: every item while no more than `capacity` were offered.
  std::vector<uint64_t> chosen() const;

 private:
  uint64_t capacity_;
  base::SplitMix64 rng_;
  uint64_t offered_ = 0;
  std::vector<uint64_t> kept_;
};

// The same sample, of text lines: the lines kept, with their stream indices, in O(capacity)
// memory. preprocess streams a corpus of any size through it.
class LineSample {
 public:
  LineSample(uint64_t capacity, uint64_t seed) : sample_(capacity, seed) {}
  void offer(const std::string& line);
  uint64_t offered() const { return sample_.offered(); }
  // The kept lines in stream order; leaves the sample empty.
  std::vector<std::string> take_in_stream_order();

 private:
  ReservoirSample sample_;
  std::vector<std::pair<uint64_t, std::string>> kept_;  // (stream index, line) by slot
};

}  // namespace nmt::data
