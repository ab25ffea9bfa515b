#include "data/reservoir_sample.h"

#include <algorithm>

namespace nmt::data {

uint64_t ReservoirSample::offer() {
  const uint64_t index = offered_++;
  if (kept_.size() < capacity_) {
    kept_.push_back(index);
    return kept_.size() - 1;
  }
  // Item i (0-based) replaces a uniformly chosen kept one with probability capacity / (i + 1).
  const uint64_t slot = rng_.below(index + 1);
  if (slot >= capacity_) return kNotKept;
  kept_[slot] = index;
  return slot;
}

std::vector<uint64_t> ReservoirSample::chosen() const {
  std::vector<uint64_t> out = kept_;
  std::sort(out.begin(), out.end());
  return out;
}

void LineSample::offer(const std::string& line) {
  const uint64_t index = sample_.offered();
  const uint64_t slot = sample_.offer();
  if (slot == ReservoirSample::kNotKept) return;
  if (slot == kept_.size())
    kept_.emplace_back(index, line);
  else
    kept_[slot] = {index, line};
}

std::vector<std::string> LineSample::take_in_stream_order() {
  std::sort(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> lines;
  lines.reserve(kept_.size());
  for (auto& kept : kept_) lines.push_back(std::move(kept.second));
  kept_.clear();
  return lines;
}

}  // namespace nmt::data
