#include "data/reservoir_sample.h"

#include <algorithm>

namespace nmt::data {

void ReservoirSample::offer() {
  const uint64_t index = offered_++;
  if (kept_.size() < capacity_) {
    kept_.push_back(index);
    return;
  }
  // Item i (0-based) replaces a uniformly chosen kept one with probability capacity / (i + 1).
  const uint64_t slot = rng_.below(index + 1);
  if (slot < capacity_) kept_[slot] = index;
}

std::vector<uint64_t> ReservoirSample::chosen() const {
  std::vector<uint64_t> out = kept_;
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace nmt::data
