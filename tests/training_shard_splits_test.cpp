// data/data_config.h's training_shard_splits: the shard splits training draws from and their
// weights, against values worked out by hand from the documented rules (a corpus's weight shared
// equally with its sampled segmentations; its reversed and joined splits at reversed_weight and
// concat_weight times its weight), and weight_after_reversed_stage zeroing only reversed splits.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "data/data_config.h"

namespace nmt::data {
namespace {

using Splits = std::vector<std::pair<std::string, double>>;

TEST(TrainingShardSplits, PlainCorpusAlone) {
  DataConfig cfg;
  cfg.train_split = "train";
  EXPECT_EQ(training_shard_splits(cfg), (Splits{{"train", 1.0}}));
}

TEST(TrainingShardSplits, WeightsOfEveryDerivedSplitPerCorpus) {
  DataConfig cfg;
  cfg.train_corpora = {{"a", 2.0}, {"b", 0.5}};
  cfg.subword_samples = 1;
  cfg.reversed_weight = 0.5;
  cfg.concat_weight = 0.25;
  // a: 2 shared by itself and 1 sample (1 each), reversed 0.5 x 2, joined 0.25 x 2;
  // b: 0.5 shared (0.25 each), reversed 0.5 x 0.5, joined 0.25 x 0.5.
  const Splits want{{"a", 1.0},        {"a.sample1", 1.0}, {"a.reversed", 1.0},  {"a.concat", 0.5},
                    {"b", 0.25},       {"b.sample1", 0.25}, {"b.reversed", 0.25}, {"b.concat", 0.125}};
  EXPECT_EQ(training_shard_splits(cfg), want);
  EXPECT_EQ(weight_after_reversed_stage(cfg, "a.reversed", 1.0), 0.0);
  EXPECT_EQ(weight_after_reversed_stage(cfg, "b.reversed", 0.25), 0.0);
  EXPECT_EQ(weight_after_reversed_stage(cfg, "a.concat", 0.5), 0.5);
  EXPECT_EQ(weight_after_reversed_stage(cfg, "b.sample1", 0.25), 0.25);
}

TEST(TrainingShardSplits, JoinedSplitWithoutTheOthers) {
  DataConfig cfg;
  cfg.train_split = "train";
  cfg.concat_weight = 1.5;
  EXPECT_EQ(training_shard_splits(cfg), (Splits{{"train", 1.0}, {"train.concat", 1.5}}));
}

}  // namespace
}  // namespace nmt::data
