// Configuration: every error class names key, value, file and line; --print-config round trip.
#include <map>
#include <utility>
#include <vector>

#include "tests/test_util.h"
#include "config/config_error.h"
#include "config/config_loader.h"

namespace nmt::config {
namespace {

using nmt::testing::TempDir;
using nmt::testing::write_text;

TEST(Config, DefaultsAreValid) { EXPECT_NO_THROW(validate(Config{}, Needs::kNothing)); }

TEST(Config, LoadsValuesAndRecordsOrigin) {
  TempDir dir;
  const std::string path = dir.file("c.yaml");
  write_text(path, "model:\n  d_model: 256\n  pre_norm: true\noptim:\n  eps: 1.0e-9\n");
  Config cfg = load_config(path, {"train.seed=7"});
  EXPECT_EQ(cfg.model.d_model, 256);
  EXPECT_TRUE(cfg.model.pre_norm);
  EXPECT_DOUBLE_EQ(cfg.optim.eps, 1e-9);
  EXPECT_EQ(cfg.train.seed, 7);
  EXPECT_EQ(cfg.origin.at("model.d_model"), path + ":2");
  EXPECT_EQ(cfg.origin.at("train.seed"), "command line 'train.seed=7'");
}

TEST(Config, UnknownKeyNamesKeyFileAndLine) {
  TempDir dir;
  const std::string path = dir.file("c.yaml");
  write_text(path, "data:\n  max_tokens: 10\n  max_tokenz: 5\n");
  EXPECT_THROW_WITH(load_config(path), ConfigError, "unknown config key 'data.max_tokenz' = '5'", path + ":3");
}

TEST(Config, UnknownSectionIsRefused) {
  EXPECT_THROW_WITH(load_config_text("modle:\n  d_model: 3\n", "x.yaml"), ConfigError, "modle", "x.yaml:1");
  EXPECT_THROW_WITH(load_config_text("model: 3\n", "x.yaml"), ConfigError, "'model'", "mapping");
}

TEST(Config, WrongTypeNamesKeyValueFileAndLine) {
  EXPECT_THROW_WITH(load_config_text("model:\n  d_model: abc\n", "x.yaml"), ConfigError, "model.d_model", "'abc'",
                    "x.yaml:2", "integer");
  EXPECT_THROW_WITH(load_config_text("model:\n  d_model: 2.5\n", "x.yaml"), ConfigError, "'2.5'",
                    "expected an integer");
  EXPECT_THROW_WITH(load_config_text("model:\n  pre_norm: maybe\n", "x.yaml"), ConfigError, "model.pre_norm",
                    "expected a boolean");
  EXPECT_THROW_WITH(load_config_text("model:\n  dropout: [1, 2]\n", "x.yaml"), ConfigError, "model.dropout", "a list",
                    "expected a number");
}

TEST(Config, OutOfRangeNamesKeyValueFileAndLine) {
  Config cfg = load_config_text("data:\n  max_tokens: -5\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kNothing), ConfigError, "data.max_tokens", "'-5'", "x.yaml:2", ">= 2");
  EXPECT_THROW_WITH(load_config_text("schedule:\n  type: cosinus\n", "x.yaml"), ConfigError, "schedule.type",
                    "'cosinus'", "x.yaml:2", "noam, inverse_sqrt, constant, cosine, linear");
  EXPECT_THROW_WITH(load_config_text("model:\n  norm: rms\n", "x.yaml"), ConfigError, "model.norm", "'rms'",
                    "x.yaml:2", "layer, scale");
  cfg = load_config_text("schedule:\n  type: cosine\n  warmup_updates: 100\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kNothing), ConfigError, "schedule.type", "'cosine'", "x.yaml:2",
                    "train.max_updates or schedule.total_updates");
  cfg = load_config_text("schedule:\n  type: cosine\n  lr: 0.001\n  min_lr: 0.01\n  warmup_updates: 1\n", "x.yaml",
                         {"train.max_updates=10"});
  EXPECT_THROW_WITH(validate(cfg, Needs::kNothing), ConfigError, "schedule.min_lr", "x.yaml:4", "must not exceed");
  cfg = load_config_text("schedule:\n  type: linear\n  warmup_updates: 100\ntrain:\n  max_updates: 100\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kNothing), ConfigError, "schedule.warmup_updates", "x.yaml:3", "below");
  cfg = load_config_text("model:\n  d_model: 100\n  heads: 8\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kNothing), ConfigError, "model.heads", "'8'", "x.yaml:3", "divide");
  cfg = load_config_text("eval:\n  average_last: 0\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kNothing), ConfigError, "eval.average_last", "'0'", "x.yaml:2", ">= 1");
  cfg = load_config_text("eval:\n  channel_weight: -0.5\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kNothing), ConfigError, "eval.channel_weight", "'-0.5'", "x.yaml:2", ">= 0");
  cfg = load_config_text("optim:\n  rdrop_alpha: -1\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kNothing), ConfigError, "optim.rdrop_alpha", "'-1.0'", "x.yaml:2", ">= 0");
  cfg = load_config_text("model:\n  dropout: 0\noptim:\n  rdrop_alpha: 5\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kNothing), ConfigError, "optim.rdrop_alpha", "'5'", "x.yaml:4",
                    "needs dropout");
  cfg = load_config_text("model:\n  dropout: 0\n  attention_dropout: 0.1\noptim:\n  rdrop_alpha: 5\n", "x.yaml");
  EXPECT_NO_THROW(validate(cfg, Needs::kNothing));
}

TEST(Config, MissingRequiredFileNamesKeyValueFileAndLine) {
  Config cfg = load_config_text("data:\n  raw_dir: /no/such/dir\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kRawData), ConfigError, "data.raw_dir", "/no/such/dir", "x.yaml:2",
                    "does not exist");
  cfg = load_config_text("data:\n  shard_dir: /no/such/shards\n", "x.yaml");
  EXPECT_THROW_WITH(validate(cfg, Needs::kShards), ConfigError, "data.shard_dir", "x.yaml:2", "manifest.json");
  TempDir dir;
  cfg = load_config_text("", "x.yaml", {"data.raw_dir=" + dir.path().string(), "data.spm_model=/no/spm.model"});
  EXPECT_THROW_WITH(validate(cfg, Needs::kRawData), ConfigError, "data.spm_model", "/no/spm.model",
                    "command line 'data.spm_model=/no/spm.model'");
  EXPECT_THROW_WITH(load_config("/no/config.yaml"), ConfigError, "/no/config.yaml", "does not exist");
}

TEST(Config, OverrideErrors) {
  EXPECT_THROW_WITH(load_config_text("", "x.yaml", {"train.sed=3"}), ConfigError, "unknown config key 'train.sed'",
                    "command line");
  EXPECT_THROW_WITH(load_config_text("", "x.yaml", {"train.seed=three"}), ConfigError, "train.seed", "'three'",
                    "integer");
  EXPECT_THROW_WITH(load_config_text("", "x.yaml", {"trainseed"}), ConfigError, "section.key=value");
}

TEST(Config, DuplicateKeyOrSectionNamesBothLines) {
  EXPECT_THROW_WITH(load_config_text("data:\n  max_tokens: 5\n  vocab_size: 9\n  max_tokens: 6\n", "x.yaml"), ConfigError,
                    "config key 'data.max_tokens' given twice: at x.yaml:2 and at x.yaml:4");
  EXPECT_THROW_WITH(load_config_text("model:\n  d_model: 8\ntrain:\n  seed: 1\nmodel:\n  heads: 2\n", "x.yaml"), ConfigError,
                    "config section 'model' given twice: at x.yaml:1 and at x.yaml:5");
  // The same key in two sections is two keys.
  EXPECT_NO_THROW(load_config_text("data:\n  max_tokens: 5\neval:\n  max_tokens: 6\n", "x.yaml"));
}

TEST(Config, SyntaxErrorNamesFileAndLine) {
  EXPECT_THROW_WITH(load_config_text("data:\n  max_tokens: [1,\n", "x.yaml"), ConfigError, "x.yaml:", "syntax");
}

TEST(Config, PrintConfigRoundTrips) {
  Config cfg = load_config_text("", "x.yaml",
                                {"optim.eps=1e-9", "schedule.factor=0.1", "model.dropout=0.3", "data.spm_model=a: b",
                                 "data.src_lang=yes", "model.pre_norm=true", "train.save_dir=", "train.max_minutes=55",
                                 "data.max_tokens=1234", "schedule.type=linear", "eval.average_last=10",
                                 "model.norm=scale", "model.fix_norm=true"});
  const std::string yaml = to_yaml(cfg);
  EXPECT_NE(yaml.find("  type: \"linear\""), std::string::npos);  // the enum printed by its name
  EXPECT_NE(yaml.find("\n  average_last: 10\n"), std::string::npos);  // the line launch/quickstart.sh reads
  Config back = load_config_text(yaml, "printed.yaml");
  EXPECT_EQ(to_yaml(back), yaml);
  EXPECT_EQ(back.optim.eps, 1e-9);
  EXPECT_EQ(back.schedule.factor, 0.1);
  EXPECT_EQ(back.data.spm_model, "a: b");
  EXPECT_EQ(back.data.src_lang, "yes");
  EXPECT_EQ(back.train.save_dir, "");
  EXPECT_EQ(back.train.max_minutes, 55.0);
  EXPECT_EQ(back.data.max_tokens, 1234);
  EXPECT_TRUE(back.model.pre_norm);
  EXPECT_EQ(back.schedule.type, ScheduleType::kLinear);
  EXPECT_EQ(back.model.norm, model::NormKind::kScale);
  EXPECT_TRUE(back.model.fix_norm);
  // Every key is printed.
  for (const std::string& key : config_keys())
    EXPECT_NE(yaml.find("  " + key.substr(key.find('.') + 1) + ":"), std::string::npos) << key;
}

// data.train_corpora: a mapping of corpus name to weight, from YAML or an override, printed as a
// flow mapping that reads back; bad names, weights and shapes are refused by key and value.
TEST(Config, TrainCorporaMapping) {
  Config cfg = load_config_text("data:\n  train_corpora: {europarl: 1, crawl: 0.25}\n", "x.yaml");
  const std::map<std::string, double> want{{"crawl", 0.25}, {"europarl", 1.0}};
  EXPECT_EQ(cfg.data.train_corpora, want);
  EXPECT_NO_THROW(validate(cfg, Needs::kNothing));
  const std::string yaml = to_yaml(cfg);
  EXPECT_NE(yaml.find("  train_corpora: {crawl: 0.25, europarl: 1.0}\n"), std::string::npos) << yaml;
  EXPECT_EQ(load_config_text(yaml, "printed.yaml").data.train_corpora, want);
  EXPECT_TRUE(load_config_text("", "x.yaml").data.train_corpora.empty());
  EXPECT_EQ(load_config_text("", "x.yaml", {"data.train_corpora={news: 2}"}).data.train_corpora,
            (std::map<std::string, double>{{"news", 2.0}}));
  EXPECT_THROW_WITH(load_config_text("data:\n  train_corpora: [a, b]\n", "x.yaml"), ConfigError, "data.train_corpora",
                    "a list", "expected a mapping of corpus name to weight", "x.yaml:2");
  EXPECT_THROW_WITH(load_config_text("data:\n  train_corpora: {a: heavy}\n", "x.yaml"), ConfigError,
                    "data.train_corpora", "expected a mapping of corpus name to weight");
  for (const auto& [value, why] : std::vector<std::pair<std::string, std::string>>{
           {"{a: 0}", "corpus 'a' needs a positive weight, got 0"},
           {"{a: -1}", "corpus 'a' needs a positive weight, got -1"},
           {"{a: .nan}", "corpus 'a' needs a positive weight, got nan"},
           {"{a/b: 1}", "corpus name 'a/b' must be a raw file prefix"},
           {"{val: 1}", "corpus 'val' is also data.valid_split or data.test_split"}}) {
    const Config bad = load_config_text("", "x.yaml", {"data.train_corpora=" + value});
    EXPECT_THROW_WITH(validate(bad, Needs::kNothing), ConfigError, "data.train_corpora", why,
                      "command line 'data.train_corpora=" + value + "'");
  }
}

}  // namespace
}  // namespace nmt::config
