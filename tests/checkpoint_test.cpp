// Checkpoints: round trip, verified loads, clear errors, and averaging.
#include "base/sha256.h"
#include "checkpoint/average.h"
#include "checkpoint/best_validations.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/model_setup.h"
#include "model/transformer.h"
#include "tests/test_util.h"

namespace nmt::checkpoint {
namespace {

using nmt::testing::read_text;
using nmt::testing::TempDir;
using nmt::testing::write_text;

model::ModelConfig tiny(int64_t d = 8) {
  model::ModelConfig c;
  c.vocab_size = 20;
  c.d_model = d;
  c.heads = 2;
  c.ffn_dim = 16;
  c.encoder_layers = c.decoder_layers = 1;
  return c;
}

Checkpoint make(model::Transformer& m, int64_t update) {
  Checkpoint c;
  c.model = model_weights(*m);
  c.update = update;
  c.epoch = 2;
  c.planner_epoch = 2;
  c.planner_cursor = 5;
  c.planner_slots = 4;
  c.config_yaml = "model:\n  d_model: 8\n";
  c.vocab_sha256 = "abc";
  c.cpu_rng = {at::detail::getDefaultCPUGenerator().get_state()};
  return c;
}

TEST(Checkpoint, RoundTrip) {
  TempDir dir;
  model::Transformer m(tiny());
  Checkpoint c = make(m, 42);
  c.gemm_backend = model::kernels::GemmBackend::kOneDnn;
  c.gemm_transposed_forward = "256x1024,256x256";
  save_checkpoint(c, dir.file("a.pt"));
  EXPECT_TRUE(std::filesystem::exists(dir.file("a.pt.sha256")));
  Checkpoint back = load_checkpoint(dir.file("a.pt"));
  EXPECT_EQ(back.update, 42);
  EXPECT_EQ(back.planner_cursor, 5);
  EXPECT_EQ(back.planner_slots, 4);
  EXPECT_EQ(back.config_yaml, c.config_yaml);
  EXPECT_EQ(back.gemm_backend, model::kernels::GemmBackend::kOneDnn);
  EXPECT_EQ(back.gemm_transposed_forward, c.gemm_transposed_forward);
  ASSERT_EQ(back.cpu_rng.size(), 1u);
  EXPECT_TRUE(back.cpu_rng[0].equal(c.cpu_rng[0]));
  for (const auto& kv : c.model) EXPECT_TRUE(back.model.at(kv.key()).equal(kv.value())) << kv.key();
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
  save_checkpoint(make(m, 43), dir.file("b.pt"));  // a field left unset stays absent
  EXPECT_FALSE(load_checkpoint(dir.file("b.pt")).gemm_transposed_forward.has_value());
}

TEST(Checkpoint, MissingCorruptAndTruncatedAreReported) {
  TempDir dir;
  EXPECT_THROW_WITH(load_checkpoint(dir.file("none.pt")), CheckpointError, "none.pt", "does not exist");
  model::Transformer m(tiny());
  save_checkpoint(make(m, 1), dir.file("a.pt"));
  std::string bytes = read_text(dir.file("a.pt"));
  bytes[bytes.size() / 2] ^= 0x40;
  write_text(dir.file("a.pt"), bytes);
  EXPECT_THROW_WITH(load_checkpoint(dir.file("a.pt")), CheckpointError, "a.pt", "checksum");
  // Without a sidecar the archive itself must still parse.
  write_text(dir.file("b.pt"), bytes.substr(0, bytes.size() / 3));
  EXPECT_THROW_WITH(load_checkpoint(dir.file("b.pt")), CheckpointError, "b.pt", "not a readable checkpoint");
}

TEST(Checkpoint, ABadTransposedForwardFieldNamesFileAndField) {
  TempDir dir;
  model::Transformer m(tiny());
  Checkpoint c = make(m, 1);
  c.gemm_transposed_forward = "256x1024,256xoops";
  save_checkpoint(c, dir.file("a.pt"));
  EXPECT_THROW_WITH(load_checkpoint(dir.file("a.pt")), CheckpointError, "a.pt", "gemm_transposed_forward", "256xoops");
}

// Hand-ranked history: losses 2.0 (u10), 1.5 (u20), 1.2 (u30, validated twice: the last
// record counts), 1.5 (u40, ties u20 and wins as the later), a training record in between.
TEST(Checkpoint, BestValidatedUpdatesRanksByLossThenLaterUpdate) {
  const std::string history = R"([{"event":"valid","update":10,"valid_loss":2.0},
    {"event":"valid","update":20,"valid_loss":1.5},{"event":"train","update":25,"loss":0.1},
    {"event":"valid","update":30,"valid_loss":0.9},{"event":"valid","update":30,"valid_loss":1.2},
    {"event":"valid","update":40,"valid_loss":1.5}])";
  EXPECT_EQ(nmt::checkpoint::best_validated_updates(history, 1, "h"), (std::vector<int64_t>{30}));
  EXPECT_EQ(nmt::checkpoint::best_validated_updates(history, 2, "h"), (std::vector<int64_t>{30, 40}));
  EXPECT_EQ(nmt::checkpoint::best_validated_updates(history, 3, "h"), (std::vector<int64_t>{20, 30, 40}));
  EXPECT_EQ(nmt::checkpoint::best_validated_updates(history, 9, "h"), (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_TRUE(nmt::checkpoint::best_validated_updates("[]", 3, "h").empty());
  // A NaN loss is written as null: that validation ranks nowhere.
  EXPECT_EQ(nmt::checkpoint::best_validated_updates(
                R"([{"event":"valid","update":5,"valid_loss":null},{"event":"valid","update":6,"valid_loss":3.0}])", 2, "h"),
            (std::vector<int64_t>{6}));
  EXPECT_THROW_WITH(nmt::checkpoint::best_validated_updates(R"([{"event":"valid","update":"x"}])", 1, "run/last.pt"),
                    CheckpointError, "run/last.pt: field 'metrics' has a validation record");
  EXPECT_THROW_WITH(nmt::checkpoint::best_validated_updates("{", 1, "run/last.pt"), CheckpointError,
                    "run/last.pt: field 'metrics' is not JSON");
}

TEST(Checkpoint, ShapeMismatchNamesTheParameter) {
  TempDir dir;
  model::Transformer small(tiny(8)), big(tiny(16));
  save_checkpoint(make(small, 1), dir.file("a.pt"));
  const Checkpoint c = load_checkpoint(dir.file("a.pt"));
  EXPECT_THROW_WITH(load_model_weights(*big, c.model, dir.file("a.pt")), CheckpointError, "a.pt", "embed.weight",
                    "shape");
  auto pre = tiny(8);
  pre.pre_norm = true;  // has encoder_norm/decoder_norm the checkpoint lacks
  model::Transformer other(pre);
  EXPECT_THROW_WITH(load_model_weights(*other, c.model, dir.file("a.pt")), CheckpointError, "lacks parameter");
}

// model.norm changes the parameters' names (above); model.fix_norm and model.heads change none,
// so only the checkpoint's stored config can tell.
TEST(Checkpoint, KeysWithoutParametersOfTheirOwnAreComparedWithTheStoredConfig) {
  model::Transformer m(tiny(8));
  Checkpoint c = make(m, 1);
  c.config_yaml = "model:\n  d_model: 8\n  heads: 2\n  fix_norm: true\n";
  auto configured = tiny(8);
  EXPECT_THROW_WITH(check_same_computation(c, configured, "a.pt"), CheckpointError, "a.pt",
                    "trained with model.fix_norm=true, but the configured model has false", "set model.fix_norm=true");
  configured.fix_norm = true;
  EXPECT_NO_THROW(check_same_computation(c, configured, "a.pt"));
  configured.heads = 4;
  EXPECT_THROW_WITH(check_same_computation(c, configured, "a.pt"), CheckpointError,
                    "trained with model.heads=2, but the configured model has 4");
  c.config_yaml = "model:\n  heads: 2\n  a_key_of_another_version: 1\n";
  EXPECT_NO_THROW(check_same_computation(c, configured, "a.pt")) << "nothing to compare with";
  c.config_yaml = "model:\n  heads: 4\n";  // fix_norm's default: a checkpoint from before the key
  configured.fix_norm = false;
  EXPECT_NO_THROW(check_same_computation(c, configured, "a.pt"));
  // model.activation has no parameters either; a checkpoint from before the key is ReLU's.
  configured.activation = model::Activation::kSilu;
  EXPECT_THROW_WITH(check_same_computation(c, configured, "a.pt"), CheckpointError,
                    "trained with model.activation=relu, but the configured model has silu");
  c.config_yaml = "model:\n  heads: 4\n  activation: silu\n";
  EXPECT_NO_THROW(check_same_computation(c, configured, "a.pt"));
}

// model.output_bias is a parameter: a checkpoint with it does not load into a model without it,
// nor the reverse, and its values reach the logits.
TEST(Checkpoint, OutputBiasIsAParameterOfItsOwn) {
  auto with = tiny(8);
  with.output_bias = true;
  model::Transformer m(with);
  {
    torch::NoGradGuard g;
    m->output_bias.copy_(torch::arange(with.vocab_size, torch::kFloat32));
  }
  Checkpoint c = make(m, 1);
  model::Transformer without(tiny(8));
  EXPECT_THROW_WITH(load_model_weights(*without, c.model, "a.pt"), CheckpointError, "output_bias");
  model::Transformer again(with);
  load_model_weights(*again, c.model, "a.pt");
  EXPECT_TRUE(torch::equal(again->output_bias, m->output_bias));
  const auto hidden = torch::zeros({1, 8});
  EXPECT_TRUE(torch::equal(again->project(hidden), torch::arange(with.vocab_size, torch::kFloat32).view({1, -1})));
}

TEST(Checkpoint, AverageIsTheMeanAndChecksInputs) {
  TempDir dir;
  model::Transformer a(tiny()), b(tiny());
  save_checkpoint(make(a, 10), dir.file("update_10.pt"));
  save_checkpoint(make(b, 20), dir.file("update_20.pt"));
  const auto paths = last_checkpoints(dir.path().string(), 2);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_NE(paths[1].find("update_20.pt"), std::string::npos);
  const Checkpoint avg = average_checkpoints(paths);
  EXPECT_EQ(avg.update, 20);
  const auto wa = model_weights(*a), wb = model_weights(*b);
  for (const auto& kv : avg.model)
    EXPECT_TRUE(torch::allclose(kv.value(), (wa.at(kv.key()) + wb.at(kv.key())) / 2, 1e-6, 1e-7)) << kv.key();
  EXPECT_THROW_WITH(last_checkpoints(dir.path().string(), 3), CheckpointError, "found 2");
  model::Transformer c(tiny(16));
  save_checkpoint(make(c, 30), dir.file("other.pt"));
  EXPECT_THROW_WITH(average_checkpoints({dir.file("update_10.pt"), dir.file("other.pt")}), CheckpointError,
                    "other.pt", "shape");
}

}  // namespace
}  // namespace nmt::checkpoint
