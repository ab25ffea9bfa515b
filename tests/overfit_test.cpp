// End to end on a tiny corpus: preprocess -> train -> greedy decode. A small model must
// memorise 32 pairs and reproduce every reference exactly (BLEU 100).
#include <random>

#include "data/preprocess.h"
#include "eval/bleu.h"
#include "eval/translator.h"
#include "tests/test_env.h"
#include "tests/test_util.h"
#include "config/config_loader.h"
#include "trainer/trainer.h"

namespace nmt::trainer {
namespace {

using nmt::testing::TempDir;
using nmt::testing::write_text;

std::vector<std::string> toy_sentences(int n, unsigned seed, const std::vector<std::string>& words) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::string s;
    const int len = 3 + static_cast<int>(rng() % 5);
    for (int w = 0; w < len; ++w) s += (w ? " " : "") + words[rng() % words.size()];
    out.push_back(s + " .");
  }
  return out;
}

TEST(EndToEnd, TinyModelMemorises32PairsExactly) {
  TempDir raw, work;
  const std::vector<std::string> de = {"ein", "Hund", "läuft", "im", "Park", "zwei", "Kinder", "spielen", "mit", "Ball"};
  const std::vector<std::string> en = {"a", "dog", "runs", "in", "park", "two", "children", "play", "with", "ball"};
  // The target is a word-by-word image of the source, so the mapping is learnable.
  const auto src = toy_sentences(32, 5, de);
  std::vector<std::string> tgt;
  for (const auto& s : src) {
    std::string t;
    std::istringstream words(s);
    for (std::string w; words >> w;) {
      auto it = std::find(de.begin(), de.end(), w);
      t += (t.empty() ? "" : " ") + (it == de.end() ? w : en[it - de.begin()]);
    }
    tgt.push_back(t);
  }
  std::string s_text, t_text;
  for (size_t i = 0; i < src.size(); ++i) {
    s_text += src[i] + "\n";
    t_text += tgt[i] + "\n";
  }
  for (const char* split : {"train", "val"}) {
    write_text(raw.file(std::string(split) + ".de"), s_text);
    write_text(raw.file(std::string(split) + ".en"), t_text);
  }
  config::Config cfg = config::load_config_text(R"(
data: {vocab_size: 40, num_shards: 2, max_tokens: 400}
model: {d_model: 64, ffn_dim: 128, heads: 4, encoder_layers: 2, decoder_layers: 2, dropout: 0.0}
optim: {label_smoothing: 0.0}
schedule: {type: inverse_sqrt, lr: 0.003, warmup_updates: 30}
train: {max_updates: 300, threads: 2, log_interval: 100, validate_interval_updates: 300, save_interval_updates: 0}
eval: {beam: 1}
)",
                                "overfit.yaml",
                                {"data.raw_dir=" + raw.path().string(), "data.shard_dir=" + work.file("shards"),
                                 "train.save_dir=" + work.file("run")});
  config::validate(cfg, config::Needs::kRawData);
  data::preprocess(cfg.data, stderr);
  {
    Trainer trainer(cfg, nmt::testing::process_group());
    trainer.run("");
  }
  eval::Translator translator(cfg, {work.file("run/last.pt")}, torch::kCPU);
  std::vector<std::string> hyps;
  for (const auto& n : translator.translate(src)) hyps.push_back(n.front().text);
  for (size_t i = 0; i < hyps.size(); ++i) EXPECT_EQ(hyps[i], tgt[i]) << "pair " << i << ": " << src[i];
  EXPECT_DOUBLE_EQ(eval::corpus_bleu(hyps, tgt).score, 100.0);
}

}  // namespace
}  // namespace nmt::trainer
