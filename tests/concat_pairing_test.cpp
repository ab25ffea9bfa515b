// data/concat_pairing.h: the partners form one cycle through every pair of the block (so each
// pair is the first half of one joined pair and the second half of another), never a pair with
// itself once there are two; fixed by (split, block) and changed by either; and, as a random
// single cycle must, the partner of a given pair uniform over the others, checked by counting
// over many blocks. joined() against hand-written ids.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "data/concat_pairing.h"

namespace nmt::data {
namespace {

// The length of the cycle through 0 (count when the partners are one cycle through all).
int64_t cycle_length_from_zero(const std::vector<int64_t>& partner) {
  int64_t at = 0, steps = 0;
  do {
    at = partner.at(static_cast<size_t>(at));
    ++steps;
  } while (at != 0 && steps <= static_cast<int64_t>(partner.size()));
  return steps;
}

TEST(ConcatPairing, OneCycleThroughEveryPairWithoutFixedPoints) {
  EXPECT_EQ(concat_partners(1, "train", 0), std::vector<int64_t>{0});
  EXPECT_TRUE(concat_partners(0, "train", 0).empty());
  EXPECT_EQ(concat_partners(2, "train", 5), (std::vector<int64_t>{1, 0}));
  for (int64_t count = 2; count <= 60; ++count)
    for (int64_t block = 0; block < 20; ++block) {
      const auto partner = concat_partners(count, "train", block);
      ASSERT_EQ(static_cast<int64_t>(partner.size()), count);
      ASSERT_EQ(cycle_length_from_zero(partner), count) << "count " << count << " block " << block;
      for (int64_t i = 0; i < count; ++i) ASSERT_NE(partner[static_cast<size_t>(i)], i);
    }
}

TEST(ConcatPairing, RefusesANegativeCount) {
  EXPECT_THROW(concat_partners(-1, "train", 0), std::invalid_argument);
}

TEST(ConcatPairing, FixedBySplitAndBlock) {
  const auto a = concat_partners(50, "train", 3);
  EXPECT_EQ(concat_partners(50, "train", 3), a);
  EXPECT_NE(concat_partners(50, "train", 4), a);
  EXPECT_NE(concat_partners(50, "europarl", 3), a);
}

TEST(ConcatPairing, PartnerUniformOverTheOthers) {
  // In a uniformly random single cycle through 5 pairs, pair 0's partner is each of 1..4 with
  // probability 1/4: 10,000 of 40,000 blocks each, standard deviation about 87.
  constexpr int kBlocks = 40000;
  std::vector<int> seen(5, 0);
  for (int block = 0; block < kBlocks; ++block) ++seen.at(static_cast<size_t>(concat_partners(5, "train", block)[0]));
  EXPECT_EQ(seen[0], 0);
  for (int p = 1; p < 5; ++p) EXPECT_NEAR(seen[static_cast<size_t>(p)], kBlocks / 4, 500) << "partner " << p;
}

TEST(ConcatPairing, JoinedIsFirstThenSecond) {
  EXPECT_EQ(joined({4, 5, 6}, {7, 8}), (std::vector<int>{4, 5, 6, 7, 8}));
  EXPECT_EQ(joined({}, {7}), std::vector<int>{7});
}

}  // namespace
}  // namespace nmt::data
