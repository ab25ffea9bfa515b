// trainer/gemm_choice: a resumed run keeps the checkpoint's transposed-forward shapes under
// oneDNN, ignores them under MKL, and refuses ones that do not parse. trainer/decoding_gemm_choice:
// decoding's library and inference plan, decided, applied and shared by rank 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "config/config_error.h"
#include "dist/communicator.h"
#include "runtime/bf16_speed_check.h"
#include "runtime/decoding_gemm_choice.h"
#include "runtime/gemm_choice.h"
#include "tests/test_env.h"

namespace nmt::runtime {
namespace {

using model::kernels::GemmBackend;
using model::kernels::WeightShape;

struct PlanScope {
  std::vector<WeightShape> saved = model::kernels::transposed_forward();
  ~PlanScope() { model::kernels::set_transposed_forward(saved); }
};

config::Config onednn_config() {
  config::Config cfg;
  cfg.train.gemm = config::Gemm::kOneDnn;
  return cfg;
}

// train.precision=bf16's start line and warning, from hand-made figures: the figures of an
// Intel Xeon whose VM hides AMX (bf16 below fp32) and of an AMD EPYC Zen 4 (bf16 about 2x).
TEST(Bf16SpeedCheck, WarnsOnlyWhereBf16ProductsRanSlowerThanFp32) {
  const auto slow = word_bf16_speed({143e9, 262e9}, "the model's products");
  EXPECT_EQ(slow.text, "bf16 143 vs fp32 262 GFLOP/s on the model's products (0.55x)");
  EXPECT_EQ(slow.warning.rfind("warning: train.precision=bf16 is slower than fp32 on this CPU: bf16 143 vs fp32 262 "
                               "GFLOP/s on the model's products (0.55x); it has bf16 instructions (",
                               0),
            0u)
      << slow.warning;
  EXPECT_NE(slow.warning.find("so train.precision=fp32 would run faster here"), std::string::npos) << slow.warning;
  const auto fast = word_bf16_speed({412e9, 212e9}, "a decoding step's products");
  EXPECT_EQ(fast.text, "bf16 412 vs fp32 212 GFLOP/s on a decoding step's products (1.94x)");
  EXPECT_EQ(fast.warning, "");
  EXPECT_EQ(word_bf16_speed({200e9, 200e9}, "x").warning, "");  // a tie is not slower
  const auto near_tie = word_bf16_speed({199.5e9, 200e9}, "x");  // 0.9975 prints as 1.00x: no warning
  EXPECT_EQ(near_tie.text, "bf16 200 vs fp32 200 GFLOP/s on x (1.00x)");
  EXPECT_EQ(near_tie.warning, "");
}

TEST(GemmChoice, ResumeKeepsTheCheckpointsTransposedForwardUnderOneDnn) {
  PlanScope scope;
  model::kernels::set_transposed_forward({{256, 256}});
  GemmDecision d{GemmBackend::kOneDnn, "onednn (train.gemm)", {{256, 256}}};
  const std::string note = keep_checkpoint_gemm(onednn_config(), GemmBackend::kOneDnn, std::string("256x1024,512x256"), d);
  const std::vector<WeightShape> want{{256, 1024}, {512, 256}};
  EXPECT_EQ(model::kernels::transposed_forward(), want);
  EXPECT_EQ(d.transposed_forward, want);
  EXPECT_NE(note.find("256x1024,512x256 (kept from the checkpoint"), std::string::npos) << note;
  // the same plan again: nothing to say
  EXPECT_EQ(keep_checkpoint_gemm(onednn_config(), GemmBackend::kOneDnn, std::string("256x1024,512x256"), d), "");
  // an older checkpoint without the field: this start's pick stays
  EXPECT_EQ(keep_checkpoint_gemm(onednn_config(), GemmBackend::kOneDnn, std::nullopt, d), "");
  EXPECT_EQ(model::kernels::transposed_forward(), want);
  // an empty plan is a plan: none on the copy
  keep_checkpoint_gemm(onednn_config(), GemmBackend::kOneDnn, std::string(""), d);
  EXPECT_TRUE(model::kernels::transposed_forward().empty());
}

TEST(GemmChoice, MklIgnoresTheCheckpointsPlanAndBadPlansAreRefused) {
  PlanScope scope;
  model::kernels::set_transposed_forward({});
  config::Config mkl;
  mkl.train.gemm = config::Gemm::kMkl;
  GemmDecision d{GemmBackend::kMkl, "mkl (train.gemm)", {}};
  EXPECT_EQ(keep_checkpoint_gemm(mkl, GemmBackend::kOneDnn, std::string("256x1024"), d), "");
  EXPECT_TRUE(model::kernels::transposed_forward().empty());
  GemmDecision o{GemmBackend::kOneDnn, "onednn (train.gemm)", {}};
  try {
    keep_checkpoint_gemm(onednn_config(), GemmBackend::kOneDnn, std::string("256x1024,oops"), o);
    FAIL() << "a bad plan was accepted";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gemm_transposed_forward"), std::string::npos) << what;
    EXPECT_NE(what.find("'oops'"), std::string::npos) << what;
  }
  EXPECT_TRUE(model::kernels::transposed_forward().empty()) << "a refused plan must not be half applied";
}

model::ModelConfig small_model() {
  model::ModelConfig m;
  m.d_model = 32;
  m.ffn_dim = 64;
  m.vocab_size = 100;
  return m;
}

// Restores the process's backend and inference plan after a test that applies a decision.
struct DecodingScope {
  GemmBackend backend = model::kernels::gemm_backend();
  std::vector<WeightShape> plan = model::kernels::inference_transposed();
  ~DecodingScope() {
    model::kernels::set_gemm_backend(backend);
    model::kernels::set_inference_transposed(plan);
  }
};

TEST(DecodingGemmChoice, EachSettingTimesItsLibrariesAndPlansOnlyTheModelsWeights) {
  const auto shapes = model::kernels::transformer_weight_shapes(32, 64, 100);
  const torch::Device cpu(torch::kCPU);
  for (const auto& [setting, starts] :
       {std::pair{config::Gemm::kMkl, "mkl (train.gemm)"}, std::pair{config::Gemm::kOneDnn, "onednn (train.gemm)"},
        std::pair{config::Gemm::kAuto, ""}}) {
    config::Config cfg;
    cfg.train.gemm = setting;
    if (setting == config::Gemm::kOneDnn && !model::kernels::onednn_available()) {
      EXPECT_THROW(decide_decoding_gemm(cfg, small_model(), cpu), config::ConfigError);
      continue;
    }
    const GemmDecision d = decide_decoding_gemm(cfg, small_model(), cpu);
    EXPECT_EQ(d.why.rfind(starts, 0), 0u) << d.why;
    EXPECT_EQ(d.why.rfind(model::kernels::gemm_backend_name(d.backend), 0), 0u) << d.why;  // names its pick first
    if (setting == config::Gemm::kAuto && model::kernels::onednn_available()) {
      EXPECT_NE(d.why.find("GFLOP/s on a decoding step's products"), std::string::npos) << d.why;
    }
    EXPECT_NE(d.why.find("; kept transposed weights: "), std::string::npos) << d.why;
    for (const WeightShape& s : d.transposed_forward)
      EXPECT_NE(std::find(shapes.begin(), shapes.end(), s), shapes.end()) << s.out << "x" << s.in;
  }
  // on CUDA no CPU product runs: MKL and no plan, nothing timed
  config::Config cfg;
  cfg.train.gemm = config::Gemm::kAuto;
  const GemmDecision cuda = decide_decoding_gemm(cfg, small_model(), torch::Device(torch::kCUDA, 0));
  EXPECT_EQ(cuda.backend, GemmBackend::kMkl);
  EXPECT_TRUE(cuda.transposed_forward.empty());
}

// Run alone and under `mpirun -np 2` (mpirun.communicator_and_reducer): every rank ends with rank
// 0's library and plan, though each could have timed its own.
TEST(DecodingGemmChoice, ChoosingAppliesRankZerosLibraryAndPlanOnEveryRank) {
  DecodingScope scope;
  config::Config cfg;
  cfg.train.gemm = config::Gemm::kAuto;
  dist::DistConfig mpi;
  mpi.backend = dist::Backend::kMpi;
  auto comm = dist::make_communicator(mpi, nmt::testing::process_group(), torch::kCPU);
  const GemmDecision d = choose_decoding_gemm(cfg, small_model(), *comm, torch::kCPU);
  EXPECT_EQ(model::kernels::gemm_backend(), d.backend);
  EXPECT_EQ(model::kernels::inference_transposed(), d.transposed_forward);
  if (comm->rank() != 0) {
    EXPECT_NE(d.why.find("(rank 0's pick); kept transposed weights: "), std::string::npos) << d.why;
  }
  // what rank 0 applied, sent again: every rank holds the same
  const auto shapes = model::kernels::transformer_weight_shapes(32, 64, 100);
  auto mine = torch::zeros({1 + static_cast<int64_t>(shapes.size())}, torch::kInt64);
  mine[0] = model::kernels::gemm_backend() == GemmBackend::kOneDnn ? 1 : 0;
  for (size_t i = 0; i < shapes.size(); ++i)
    mine[static_cast<int64_t>(i) + 1] = model::kernels::inference_on_transposed_weight(shapes[i].out, shapes[i].in);
  auto rank0 = mine.clone();
  comm->broadcast(rank0, 0);
  EXPECT_TRUE(torch::equal(mine, rank0)) << "rank " << comm->rank();
  // applying a decision sets exactly its plan
  apply_decoding_gemm({GemmBackend::kMkl, "", {{64, 32}}});
  EXPECT_EQ(model::kernels::inference_transposed(), (std::vector<WeightShape>{{64, 32}}));
  EXPECT_TRUE(model::kernels::inference_on_transposed_weight(64, 32));
  EXPECT_FALSE(model::kernels::inference_on_transposed_weight(32, 64));
}

}  // namespace
}  // namespace nmt::runtime
