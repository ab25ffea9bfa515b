#include "data/concat_pairing.h"

#include <numeric>

#include "base/fnv1a.h"
#include "base/splitmix64.h"

namespace nmt::data {

std::vector<int64_t> concat_partners(int64_t count, const std::string& split, int64_t block) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), int64_t{0});
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

}  // namespace nmt::data
