// data/reservoir_sample.h: every item while under capacity; otherwise `capacity` distinct
// indices, ascending, the same for the same seed; and each item kept with probability
// capacity / n (Algorithm R's invariant), checked by counting over many seeds.
#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "data/reservoir_sample.h"

namespace nmt::data {
namespace {

std::vector<uint64_t> sample(uint64_t n, uint64_t capacity, uint64_t seed) {
  ReservoirSample s(capacity, seed);
  for (uint64_t i = 0; i < n; ++i) s.offer();
  EXPECT_EQ(s.offered(), n);
  return s.chosen();
}

TEST(ReservoirSample, KeepsEveryItemWhileUnderCapacity) {
  std::vector<uint64_t> all(7);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sample(7, 10, 1), all);
  EXPECT_EQ(sample(7, 7, 1), all);
  EXPECT_TRUE(sample(0, 3, 1).empty());
}

TEST(ReservoirSample, CapacityDistinctAscendingIndicesFixedBySeed) {
  const auto a = sample(1000, 25, 1);
  ASSERT_EQ(a.size(), 25u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<uint64_t>(a.begin(), a.end()).size(), 25u);
  EXPECT_LT(a.back(), 1000u);
  EXPECT_EQ(sample(1000, 25, 1), a);
  EXPECT_NE(sample(1000, 25, 2), a);
}

TEST(ReservoirSample, EachItemIsKeptWithProbabilityCapacityOverN) {
  constexpr uint64_t n = 12, k = 3, trials = 30000;
  std::vector<int> kept(n, 0);
  for (uint64_t seed = 0; seed < trials; ++seed)
    for (uint64_t i : sample(n, k, seed)) ++kept[i];
  // Binomial(30000, 0.25): standard deviation 75, so 6 of them is 450.
  for (uint64_t i = 0; i < n; ++i) EXPECT_NEAR(kept[i], trials * k / n, 450) << "item " << i;
}

// LineSample keeps the lines themselves: exactly those at ReservoirSample's indices for the same
// seed and stream, in stream order, whether under or over capacity.
TEST(LineSample, KeepsTheLinesAtTheSampledIndicesInStreamOrder) {
  for (uint64_t n : {5u, 40u, 1000u}) {
    LineSample lines(25, 7);
    for (uint64_t i = 0; i < n; ++i) lines.offer("line " + std::to_string(i));
    EXPECT_EQ(lines.offered(), n);
    std::vector<std::string> expected;
    for (uint64_t i : sample(n, 25, 7)) expected.push_back("line " + std::to_string(i));
    EXPECT_EQ(lines.take_in_stream_order(), expected) << n << " lines offered";
  }
}

}  // namespace
}  // namespace nmt::data
