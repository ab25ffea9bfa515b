// Multilingual models (data.directions): the shard splits training reads per direction, the
// configuration's refusals (one ConfigError naming key and value), each language's share of
// the vocabulary's sample against values worked out by hand, and the decoder's first token.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/config_error.h"
#include "config/config_loader.h"
#include "data/batch.h"
#include "data/data_config.h"
#include "data/language_sample.h"
#include "tests/test_util.h"

namespace nmt::data {
namespace {

using Splits = std::vector<std::pair<std::string, double>>;

DataConfig multilingual(std::vector<Direction> directions) {
  DataConfig cfg;
  cfg.directions = std::move(directions);
  return cfg;
}

TEST(Directions, EveryCorpusInEveryDirectionAndOneValidationSplitEach) {
  DataConfig cfg = multilingual({{"de", "en"}, {"en", "de"}, {"fr", "en"}});
  EXPECT_EQ(training_corpora(cfg), (Splits{{"train.de-en", 1.0}, {"train.en-de", 1.0}, {"train.fr-en", 1.0}}));
  EXPECT_EQ(validation_splits(cfg), (std::vector<std::string>{"val.de-en", "val.en-de", "val.fr-en"}));
  EXPECT_TRUE(is_training_corpus(cfg, "train.en-de"));
  EXPECT_FALSE(is_training_corpus(cfg, "train"));
  EXPECT_FALSE(is_training_corpus(cfg, "val.de-en"));
}

TEST(Directions, ACorpusNamedWithADirectionIsReadInThatDirectionOnly) {
  DataConfig cfg = multilingual({{"de", "en"}, {"fr", "en"}});
  cfg.train_corpora = {{"train", 1.0}, {"bt.fr-en", 0.5}};
  EXPECT_EQ(training_corpora(cfg), (Splits{{"train.de-en", 1.0}, {"bt.fr-en", 0.5}, {"train.fr-en", 1.0}}));
  const auto corpora = directed_training_corpora(cfg);
  ASSERT_EQ(corpora.size(), 3u);
  EXPECT_EQ(corpora[1].prefix, "bt");  // raw files bt.fr and bt.en
  EXPECT_EQ(corpora[1].corpus, "bt.fr-en");
  EXPECT_EQ(corpora[1].direction.name(), "fr-en");
}

TEST(Directions, BilingualConfigsReadAsBefore) {
  DataConfig cfg;
  cfg.train_corpora = {{"a", 2.0}, {"b", 1.0}};
  EXPECT_EQ(training_corpora(cfg), (Splits{{"a", 2.0}, {"b", 1.0}}));
  EXPECT_EQ(validation_splits(cfg), (std::vector<std::string>{"val"}));
}

config::Config load(const std::vector<std::string>& overrides) {
  const config::Config cfg = config::load_config_text("", "test", overrides);
  config::validate(cfg, config::Needs::kNothing);
  return cfg;
}

TEST(Directions, ConfigParsesDirectionsTagsAndTemperatures) {
  const auto cfg = load({"data.directions=[de-en, en-de]", "data.lang_tag=decoder", "data.sampling_temperature=5",
                         "data.spm_temperature=equal"});
  ASSERT_EQ(cfg.data.directions.size(), 2u);
  EXPECT_EQ(cfg.data.directions[1].name(), "en-de");
  EXPECT_EQ(cfg.data.lang_tag, LangTag::kDecoder);
  EXPECT_EQ(cfg.data.sampling_temperature, 5.0);
  EXPECT_EQ(cfg.data.spm_temperature, 0.0);
  // The resolved config reads back to the same values.
  const auto again = config::load_config_text(config::to_yaml(cfg), "resolved");
  EXPECT_EQ(again.data.directions, cfg.data.directions);
  EXPECT_EQ(again.data.sampling_temperature, 5.0);
  EXPECT_EQ(config::load_config_text(config::to_yaml(config::Config{}), "defaults").data.sampling_temperature, 0.0);
}

// Checkpoints written before data.sampling_temperature took "off" stored 0.0 for it (every
// bilingual run's, e.g. the En->Fr yardstick of 6f945af): their config still reads, as off, so
// that resume, evaluate and translate keep comparing it, while a user's 0 stays refused.
TEST(Directions, StoredConfigsOfEarlierVersionsReadTheirZeroTemperatureAsOff) {
  const std::string earlier = "data:\n  sampling_temperature: 0.0\n  spm_temperature: 0\ntrain:\n  max_updates: 7\n";
  const auto cfg = config::load_stored_config(earlier, "update_15500.pt (its config)");
  EXPECT_EQ(cfg.data.sampling_temperature, 0.0);
  EXPECT_EQ(cfg.data.spm_temperature, 0.0);
  EXPECT_EQ(cfg.train.max_updates, 7);
  EXPECT_THROW_WITH(config::load_config_text(earlier, "c.yaml"), config::ConfigError, "data.sampling_temperature",
                    "must be a number > 0");
  EXPECT_THROW_WITH(config::load_stored_config("data:\n  sampling_temperature: -1\n", "x.pt"), config::ConfigError,
                    "data.sampling_temperature");
  EXPECT_EQ(config::load_stored_config("data:\n  sampling_temperature: 2\n", "x.pt").data.sampling_temperature, 2.0);
}

TEST(Directions, ConfigRefusals) {
  using config::ConfigError;
  EXPECT_THROW_WITH(load({"data.directions=[de-en, fr-en, de-en]"}), ConfigError, "direction 'de-en' is listed twice");
  EXPECT_THROW_WITH(load({"data.directions=[de_en]"}), ConfigError, "'de_en' is not a direction");
  EXPECT_THROW_WITH(load({"data.directions=[de-de]"}), ConfigError, "translates a language into itself");
  EXPECT_THROW_WITH(load({"data.directions=[de-en, en-de]"}), ConfigError,
                    "translate into 2 languages: the model must be told which");
  EXPECT_THROW_WITH(load({"data.lang_tag=source"}), ConfigError, "needs data.directions");
  EXPECT_THROW_WITH(load({"data.sampling_temperature=0"}), ConfigError, "must be a number > 0 (and <= 1e6), or off");
  EXPECT_THROW_WITH(load({"data.sampling_temperature=-2"}), ConfigError, "must be a number > 0");
  EXPECT_THROW_WITH(load({"data.spm_temperature=0"}), ConfigError, "or equal");
  EXPECT_THROW_WITH(load({"data.directions=[de-en, fr-en]", "train.select_direction=en-de"}), ConfigError,
                    "is not one of data.directions");
  EXPECT_THROW_WITH(load({"data.directions=[de-en, en-de]", "data.lang_tag=source", "data.train_corpora={train: 1, bt: 1}",
                          "data.source_tags={bt: \"<2en>\"}"}),
                    ConfigError, "is the language tag of target language 'en'");
  EXPECT_THROW_WITH(load({"data.directions=[de-en]", "data.reversed_weight=1"}), ConfigError,
                    "cannot be combined with data.directions");
  EXPECT_NO_THROW(load({"data.directions=[de-en, fr-en, cs-en]"}));  // many-to-one needs no tag
}

TEST(LanguageSample, SharesFollowTheTemperature) {
  std::map<std::string, LanguageText> langs;
  langs["big"].lines = 900;
  langs["small"].lines = 100;
  // Equal shares of min(budget, 1000) lines.
  EXPECT_EQ(language_shares(langs, 600, 0), (std::map<std::string, int64_t>{{"big", 300}, {"small", 300}}));
  // T = 1: proportional to size. T = 2: sqrt(900) = 30 and sqrt(100) = 10 of 1000: 750 / 250.
  EXPECT_EQ(language_shares(langs, 5000, 1), (std::map<std::string, int64_t>{{"big", 900}, {"small", 100}}));
  EXPECT_EQ(language_shares(langs, 5000, 2), (std::map<std::string, int64_t>{{"big", 750}, {"small", 250}}));
}

TEST(LanguageSample, ASmallLanguageIsRepeatedToItsShare) {
  nmt::testing::TempDir dir;
  nmt::testing::write_text(dir.file("a.txt"), "a1\na2\n\na3\n");
  nmt::testing::write_text(dir.file("b.txt"), "b1\nb2\nb3\nb4\nb5\nb6\n");
  std::map<std::string, LanguageText> langs;
  langs["a"] = {{dir.file("a.txt")}, 4};
  langs["b"] = {{dir.file("b.txt")}, 6};
  const auto lines = sample_languages(langs, language_shares(langs, 10, 0));  // 5 each
  ASSERT_EQ(lines.size(), 10u);
  // a: its 3 non-empty lines (the empty one is not offered), repeated in order to 5.
  EXPECT_EQ(std::vector<std::string>(lines.begin(), lines.begin() + 5),
            (std::vector<std::string>{"a1", "a2", "a3", "a1", "a2"}));
  // b: 5 of its 6 lines, each once, in stream order.
  const std::vector<std::string> b(lines.begin() + 5, lines.end());
  EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
  EXPECT_EQ(std::adjacent_find(b.begin(), b.end()), b.end());
  for (const auto& l : b) EXPECT_EQ(l[0], 'b');
}

TEST(DecoderStart, ALanguageTagReplacesBosWhereGiven) {
  SpecialIds special;  // pad 0, bos 2, eos 3
  const std::vector<int64_t> starts{-1, 7};
  const auto [in, out] = pad_target({{10, 11}, {12}}, special, &starts);
  EXPECT_EQ(in[0][0].item<int64_t>(), special.bos);
  EXPECT_EQ(in[1][0].item<int64_t>(), 7);
  EXPECT_EQ(in[1][1].item<int64_t>(), 12);
  EXPECT_EQ(out[1][0].item<int64_t>(), 12);  // the tag is input only: never a prediction
  EXPECT_EQ(out[1][1].item<int64_t>(), special.eos);
}

}  // namespace
}  // namespace nmt::data
