// Batch planner: the "Batches and ranks" contract of docs/ARCHITECTURE.md as properties.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "data/batch.h"
#include "data/batch_planner.h"
#include "data/data_error.h"
#include "tests/shard_fixture.h"

namespace nmt::data {
namespace {

struct Lengths {
  std::vector<int32_t> src, tgt;
};

Lengths random_lengths(int n, int max_len, unsigned seed) {
  auto pairs = nmt::testing::random_pairs(n, max_len, 10, seed);
  Lengths l;
  for (const auto& p : pairs) {
    l.src.push_back(static_cast<int32_t>(p.src.size()));
    l.tgt.push_back(static_cast<int32_t>(p.tgt.size()));
  }
  return l;
}

int64_t cost(const MicroBatch& b, const Lengths& l) {
  int64_t longest = 0;
  for (int64_t i : b) longest = std::max<int64_t>(longest, std::max(l.src[i], l.tgt[i]) + 1);
  return static_cast<int64_t>(b.size()) * longest;
}

TEST(Planner, EveryExampleOncePerEpochForAllWorldSizes) {
  const Lengths l = random_lengths(997, 40, 3);
  for (int64_t world = 1; world <= 8; ++world) {
    for (int64_t uf = 1; uf <= 3; ++uf) {
      BatchPlanner p(l.src, l.tgt, {/*max_tokens=*/200, /*seed=*/5, world, uf});
      for (int64_t epoch = 1; epoch <= 2; ++epoch) {
        std::vector<int> seen(l.src.size(), 0);
        for (int64_t u = 0; u < p.updates_per_epoch(); ++u)
          for (int64_t r = 0; r < world; ++r) {
            const auto mine = p.rank_batches(epoch, u, r);
            ASSERT_EQ(static_cast<int64_t>(mine.size()), uf);
            for (const auto& b : mine) {
              EXPECT_LE(cost(b, l), 200);
              for (int64_t i : b) ++seen[i];
            }
          }
        for (size_t i = 0; i < seen.size(); ++i)
          ASSERT_EQ(seen[i], 1) << "example " << i << " world " << world << " uf " << uf << " epoch " << epoch;
      }
    }
  }
}

TEST(Planner, EpochTailGivesSomeRanksEmptyMicroBatches) {
  const Lengths l = random_lengths(100, 10, 4);
  BatchPlanner p(l.src, l.tgt, {40, 1, 3, 1});
  const int64_t n = static_cast<int64_t>(p.micro_batches().size());
  ASSERT_NE(n % 3, 0) << "fixture should leave a ragged tail";
  const auto last = p.update_slots(1, p.updates_per_epoch() - 1);
  int64_t empty = 0;
  for (const auto& b : last) empty += b.empty();
  EXPECT_EQ(empty, 3 - n % 3);
  // Empties sit in the tail slots, so the highest ranks get them.
  EXPECT_TRUE(last.back().empty());
  EXPECT_FALSE(last.front().empty());
}

TEST(Planner, SameSlotsPerUpdateGiveSameMicroBatchesPerUpdate) {
  const Lengths l = random_lengths(500, 30, 5);
  BatchPlanner a(l.src, l.tgt, {150, 9, 2, 1}), b(l.src, l.tgt, {150, 9, 1, 2}), c(l.src, l.tgt, {150, 9, 4, 3}),
      d(l.src, l.tgt, {150, 9, 2, 6}), e(l.src, l.tgt, {150, 9, 12, 1});
  ASSERT_EQ(a.updates_per_epoch(), b.updates_per_epoch());
  for (int64_t u = 0; u < a.updates_per_epoch(); ++u) {
    EXPECT_EQ(a.update_slots(2, u), b.update_slots(2, u));
    // Rank r of world 2 at step 0 holds the same batch as rank 0 of world 1 at step r.
    EXPECT_EQ(a.rank_batches(2, u, 1)[0], b.rank_batches(2, u, 0)[1]);
  }
  for (int64_t u = 0; u < c.updates_per_epoch(); ++u) {
    EXPECT_EQ(c.update_slots(1, u), d.update_slots(1, u));
    EXPECT_EQ(c.update_slots(1, u), e.update_slots(1, u));
  }
}

TEST(Planner, SameSeedAndEpochSamePlanOtherwiseDifferent) {
  const Lengths l = random_lengths(400, 20, 6);
  BatchPlanner a(l.src, l.tgt, {100, 3, 2, 1}), b(l.src, l.tgt, {100, 3, 2, 1}), c(l.src, l.tgt, {100, 4, 2, 1});
  EXPECT_EQ(a.update_slots(1, 0), b.update_slots(1, 0));
  EXPECT_NE(a.update_slots(1, 0), a.update_slots(2, 0));
  EXPECT_NE(a.update_slots(1, 0), c.update_slots(1, 0));
  // The order is fixed by definition (splitmix64), not by the standard library.
  EXPECT_EQ(shuffled_order(5, 1, 1), shuffled_order(5, 1, 1));
  std::vector<int64_t> sorted = shuffled_order(1000, 1, 1);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
}

TEST(Planner, RestoreStateContinuesIdentically) {
  const Lengths l = random_lengths(300, 20, 7);
  BatchPlanner a(l.src, l.tgt, {80, 2, 2, 2});
  std::vector<std::vector<MicroBatch>> straight;
  for (int i = 0; i < 3 * a.updates_per_epoch(); ++i) straight.push_back(a.next(1));
  for (int stop : {0, 1, 5, static_cast<int>(a.updates_per_epoch()), static_cast<int>(a.updates_per_epoch()) + 2}) {
    BatchPlanner b(l.src, l.tgt, {80, 2, 2, 2});
    for (int i = 0; i < stop; ++i) b.next(1);
    BatchPlanner c(l.src, l.tgt, {80, 2, 2, 2});
    c.restore(b.state());
    for (int i = stop; i < static_cast<int>(straight.size()); ++i) ASSERT_EQ(c.next(1), straight[i]) << stop << " " << i;
  }
  BatchPlanner other(l.src, l.tgt, {80, 2, 1, 2});
  EXPECT_THROW_WITH(other.restore(a.state()), DataError, "world_size x update_freq = 4", "has 2");
}

// data.train_corpora: three corpora of 300, 500 and 200 examples with weights 1, 3 and 0.5.
struct Mixture {
  Lengths l = random_lengths(1000, 20, 11);
  std::vector<CorpusSpan> spans{{0, 300, 1.0}, {300, 800, 3.0}, {800, 1000, 0.5}};
  BatchPlanner planner(int64_t world, int64_t uf, uint64_t seed = 5) const {
    return BatchPlanner(l.src, l.tgt, {/*max_tokens=*/120, seed, world, uf}, spans);
  }
};

// Micro-batches drawn from each corpus in proportion to its weight: 4,000 updates x 4 slots,
// each corpus's share within 4.5 standard deviations of the binomial around weight / 4.5. Every
// micro-batch holds examples of one corpus only, and there are no empty slots.
TEST(PlannerMixture, DrawsEachCorpusInProportionToItsWeight) {
  const Mixture m;
  std::vector<int64_t> drawn(3, 0);
  const int64_t n = 4000 * 4;
  BatchPlanner q = m.planner(2, 2);
  for (int64_t u = 0; u < 4000; ++u) {
    const BatchPlanner::State st = q.state();
    for (const MicroBatch& b : q.update_slots(st.epoch, st.cursor)) {
      ASSERT_FALSE(b.empty());
      const int64_t c = q.corpus_of(b.front());
      for (int64_t i : b) ASSERT_EQ(q.corpus_of(i), c);
      ++drawn[c];
    }
    q.next(0);
  }
  const double weights[3] = {1.0, 3.0, 0.5};
  for (int c = 0; c < 3; ++c) {
    const double share = weights[c] / 4.5, sd = std::sqrt(n * share * (1 - share));
    EXPECT_NEAR(static_cast<double>(drawn[c]), n * share, 4.5 * sd) << "corpus " << c;
  }
}

// data.sampling_temperature: the draws' shares follow (examples x weight)^(1/T), normalised,
// computed here from the formula: a chi-square test of 16,000 draws (2 degrees of freedom; 13.8
// is the 0.1% critical value), at T = 1 (by size x weight), 5 (near uniform) and 0 (the weights).
TEST(PlannerMixture, SamplingTemperatureFollowsTheFormula) {
  const Mixture m;
  const double examples[3] = {300, 500, 200}, weights[3] = {1.0, 3.0, 0.5};
  for (double t : {1.0, 5.0, 0.0}) {
    std::vector<CorpusSpan> spans = m.spans;
    apply_sampling_temperature(spans, t);
    BatchPlanner q(m.l.src, m.l.tgt, {/*max_tokens=*/120, 5, 2, 2}, spans);
    std::vector<int64_t> drawn(3, 0);
    const int64_t n = 4000 * 4;
    for (int64_t u = 0; u < 4000; ++u) {
      const BatchPlanner::State st = q.state();
      for (const MicroBatch& b : q.update_slots(st.epoch, st.cursor)) ++drawn[q.corpus_of(b.front())];
      q.next(0);
    }
    double p[3], total = 0, chi2 = 0;
    for (int c = 0; c < 3; ++c) total += p[c] = t == 0 ? weights[c] : std::pow(examples[c] * weights[c], 1.0 / t);
    for (int c = 0; c < 3; ++c) {
      const double expected = n * p[c] / total;
      chi2 += (drawn[c] - expected) * (drawn[c] - expected) / expected;
    }
    EXPECT_LT(chi2, 13.8) << "T = " << t << ": drawn " << drawn[0] << ", " << drawn[1] << ", " << drawn[2];
  }
  std::vector<CorpusSpan> spans = m.spans;
  EXPECT_THROW_WITH(apply_sampling_temperature(spans, -1), DataError, "data.sampling_temperature must be positive");
}

// Each corpus is walked through its own epochs: within any window of draws from a corpus that
// covers its micro-batches once (from the start of its epoch), each of its examples appears once.
TEST(PlannerMixture, EachCorpusCyclesThroughItsOwnExamples) {
  const Mixture m;
  BatchPlanner p = m.planner(1, 1);
  std::vector<std::vector<int64_t>> seen_in_order(3);
  for (int64_t u = 0; u < 3000; ++u) {
    const BatchPlanner::State st = p.state();
    for (const MicroBatch& b : p.update_slots(st.epoch, st.cursor)) seen_in_order[p.corpus_of(b.front())].push_back(b.front());
    p.next(0);
  }
  const std::vector<MicroBatch> all = p.micro_batches();
  for (int c = 0; c < 3; ++c) {
    int64_t batches_of_c = 0;
    for (const MicroBatch& b : all) batches_of_c += p.corpus_of(b.front()) == c;
    ASSERT_GE(static_cast<int64_t>(seen_in_order[c].size()), 2 * batches_of_c) << "corpus " << c;
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::set<int64_t> firsts(seen_in_order[c].begin() + epoch * batches_of_c,
                               seen_in_order[c].begin() + (epoch + 1) * batches_of_c);
      EXPECT_EQ(static_cast<int64_t>(firsts.size()), batches_of_c) << "corpus " << c << " epoch " << epoch + 1;
    }
  }
}

// N ranks == 1 rank with update_freq N, and a restored planner (as on resume, including a
// fresh one that must replay the draws) continues identically; another seed draws otherwise.
TEST(PlannerMixture, SameSlotsForEqualSlotsPerUpdateAndAfterRestore) {
  const Mixture m;
  BatchPlanner a = m.planner(4, 1), b = m.planner(1, 4), c = m.planner(2, 2);
  BatchPlanner::State mid{};
  std::vector<std::vector<MicroBatch>> later;
  for (int64_t u = 0; u < 700; ++u) {
    const auto st = a.state();
    if (u == 400) mid = st;
    const auto slots = a.update_slots(st.epoch, st.cursor);
    ASSERT_EQ(slots, b.update_slots(st.epoch, st.cursor)) << "update " << u;
    ASSERT_EQ(slots, c.update_slots(st.epoch, st.cursor)) << "update " << u;
    if (u >= 400) later.push_back(slots);
    a.next(0);
  }
  BatchPlanner resumed = m.planner(2, 2);
  resumed.restore(mid);
  for (const auto& slots : later) {
    const auto st = resumed.state();
    ASSERT_EQ(resumed.update_slots(st.epoch, st.cursor), slots);
    resumed.next(0);
  }
  BatchPlanner other_seed = m.planner(4, 1, 6);
  EXPECT_NE(other_seed.update_slots(1, 0), m.planner(4, 1).update_slots(1, 0));
}

// One corpus spanning every example plans exactly as the plain planner, and bad spans are named.
TEST(PlannerMixture, OneCorpusIsThePlainPlanAndBadSpansAreErrors) {
  const Lengths l = random_lengths(300, 20, 12);
  BatchPlanner plain(l.src, l.tgt, {120, 5, 2, 1}), one(l.src, l.tgt, {120, 5, 2, 1}, {{0, 300, 1.0}});
  for (int64_t epoch = 1; epoch <= 2; ++epoch)
    for (int64_t u = 0; u < plain.updates_per_epoch(); ++u) ASSERT_EQ(plain.update_slots(epoch, u), one.update_slots(epoch, u));
  EXPECT_THROW(BatchPlanner(l.src, l.tgt, {120, 5, 1, 1}, {{0, 100, 1.0}, {100, 100, 1.0}}), DataError);
  EXPECT_THROW(BatchPlanner(l.src, l.tgt, {120, 5, 1, 1}, {{0, 100, 1.0}, {100, 300, 0.0}}), DataError);
}

// data.reversed_until_update: corpus 2 (weight 0.5) gets later weight 0 from update 300 on.
// Before the change the plan is the plain mixture's, slot for slot; from it on, corpus 2 is
// never drawn and corpora 0 and 1 share the slots 1 : 3 (within 4.5 standard deviations);
// a restored planner continues identically across the change; bad later weights are errors.
TEST(PlannerMixture, LaterWeightsFromTheirUpdateOn) {
  Mixture m;
  const BatchPlanner plain = m.planner(2, 2);
  for (auto& span : m.spans) span.later_weight = span.weight;
  m.spans[2].later_weight = 0.0;  // the last corpus: its interval must close exactly at 1
  const auto staged = [&] { return BatchPlanner(m.l.src, m.l.tgt, {120, 5, 2, 2, /*weights_change_at=*/300}, m.spans); };
  BatchPlanner a = staged(), restored = staged();
  std::vector<int64_t> drawn(3, 0);
  BatchPlanner::State at_250{};
  std::vector<std::vector<MicroBatch>> from_250;
  for (int64_t u = 0; u < 2300; ++u) {
    const auto st = a.state();
    const auto slots = a.update_slots(st.epoch, st.cursor);
    if (u < 300) ASSERT_EQ(slots, plain.update_slots(st.epoch, st.cursor)) << "update " << u;
    if (u == 250) at_250 = st;
    if (u >= 250 && u < 400) from_250.push_back(slots);
    for (const MicroBatch& b : slots)
      if (u >= 300) ++drawn[a.corpus_of(b.front())];
    a.next(0);
  }
  EXPECT_EQ(drawn[2], 0);
  const double n = 2000 * 4, share = 0.25, sd = std::sqrt(n * share * (1 - share));
  EXPECT_NEAR(static_cast<double>(drawn[0]), n * share, 4.5 * sd);
  restored.restore(at_250);
  for (const auto& slots : from_250) {
    const auto st = restored.state();
    ASSERT_EQ(restored.update_slots(st.epoch, st.cursor), slots);
    restored.next(0);
  }
  for (auto& span : m.spans) span.later_weight = 0.0;
  EXPECT_THROW_WITH(staged(), DataError, "every training corpus has later weight 0");
  m.spans[0].later_weight = -1.0;
  EXPECT_THROW_WITH(staged(), DataError, "training corpus 0 has a negative later weight");
}

TEST(Planner, ExampleLongerThanMaxTokensIsAnError) {
  EXPECT_THROW_WITH(pack_micro_batches({3, 50}, {4, 2}, 20), DataError, "example 1", "51", "max_tokens = 20");
}

TEST(Planner, RankReadsOnlyItsOwnMicroBatches) {
  nmt::testing::TempDir dir;
  const auto pairs = nmt::testing::random_pairs(400, 12, 30, 9);
  write_shard_dir(dir.path(), pairs, 9, 30);
  const int64_t world = 3;
  for (int64_t rank = 0; rank < world; ++rank) {
    ShardedCorpus corpus(dir.path().string(), "train");
    BatchPlanner planner(corpus.src_lengths(), corpus.tgt_lengths(), {60, 1, world, 1});
    int64_t expected = 0;
    std::set<int64_t> shards_touched;
    for (int64_t u = 0; u < planner.updates_per_epoch(); ++u)
      for (const auto& mb : planner.rank_batches(1, u, rank)) {
        for (int64_t i : mb) expected += 4 * (pairs[i].src.size() + pairs[i].tgt.size());
        make_batch(corpus, mb, SpecialIds{});
      }
    EXPECT_EQ(corpus.token_bytes_read(), expected) << "rank " << rank;
    int64_t total = 0;
    for (const auto& p : pairs) total += 4 * (p.src.size() + p.tgt.size());
    EXPECT_LT(corpus.token_bytes_read(), total / 2) << "a rank of 3 should read about a third";
  }
}

TEST(Planner, BatchTensorsCarryEosBosAndPadding) {
  nmt::testing::TempDir dir;
  std::vector<nmt::testing::Pair> pairs = {{{5, 6, 7}, {8, 9}}, {{10}, {11, 12, 13}}};
  write_shard_dir(dir.path(), pairs, 1, 20);
  ShardedCorpus corpus(dir.path().string(), "train");
  SpecialIds sp;  // pad 0, bos 2, eos 3
  Batch b = make_batch(corpus, {0, 1}, sp);
  EXPECT_TRUE(b.src.equal(torch::tensor({5, 6, 7, 3, 10, 3, 0, 0}, torch::kInt64).view({2, 4})));
  EXPECT_TRUE(b.tgt_in.equal(torch::tensor({2, 8, 9, 0, 2, 11, 12, 13}, torch::kInt64).view({2, 4})));
  EXPECT_TRUE(b.tgt_out.equal(torch::tensor({8, 9, 3, 0, 11, 12, 13, 3}, torch::kInt64).view({2, 4})));
  EXPECT_EQ(b.tgt_tokens, 7);
  EXPECT_EQ(b.src_tokens, 6);
}

}  // namespace
}  // namespace nmt::data
