// trainer/gemm_choice: a resumed run keeps the checkpoint's transposed-forward shapes under
// oneDNN, ignores them under MKL, and refuses ones that do not parse; auto times the products
// of the workload at hand.
#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>

#include "trainer/gemm_choice.h"

namespace nmt::trainer {
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

TEST(GemmChoice, ResumeKeepsTheCheckpointsTransposedForwardUnderOneDnn) {
  PlanScope scope;
  model::kernels::set_transposed_forward({{256, 256}});
  GemmDecision d{GemmBackend::kOneDnn, "onednn (train.gemm)", {{256, 256}}};
  const std::string note = keep_checkpoint_gemm(onednn_config(), "onednn", std::string("256x1024,512x256"), d);
  const std::vector<WeightShape> want{{256, 1024}, {512, 256}};
  EXPECT_EQ(model::kernels::transposed_forward(), want);
  EXPECT_EQ(d.transposed_forward, want);
  EXPECT_NE(note.find("256x1024,512x256 (kept from the checkpoint"), std::string::npos) << note;
  // the same plan again: nothing to say
  EXPECT_EQ(keep_checkpoint_gemm(onednn_config(), "onednn", std::string("256x1024,512x256"), d), "");
  // an older checkpoint without the field: this start's pick stays
  EXPECT_EQ(keep_checkpoint_gemm(onednn_config(), "onednn", std::nullopt, d), "");
  EXPECT_EQ(model::kernels::transposed_forward(), want);
  // an empty plan is a plan: none on the copy
  keep_checkpoint_gemm(onednn_config(), "onednn", std::string(""), d);
  EXPECT_TRUE(model::kernels::transposed_forward().empty());
}

TEST(GemmChoice, MklIgnoresTheCheckpointsPlanAndBadPlansAreRefused) {
  PlanScope scope;
  model::kernels::set_transposed_forward({});
  config::Config mkl;
  mkl.train.gemm = config::Gemm::kMkl;
  GemmDecision d{GemmBackend::kMkl, "mkl (train.gemm)", {}};
  EXPECT_EQ(keep_checkpoint_gemm(mkl, "onednn", std::string("256x1024"), d), "");
  EXPECT_TRUE(model::kernels::transposed_forward().empty());
  GemmDecision o{GemmBackend::kOneDnn, "onednn (train.gemm)", {}};
  try {
    keep_checkpoint_gemm(onednn_config(), "onednn", std::string("256x1024,oops"), o);
    FAIL() << "a bad plan was accepted";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gemm_transposed_forward"), std::string::npos) << what;
    EXPECT_NE(what.find("'oops'"), std::string::npos) << what;
  }
  EXPECT_TRUE(model::kernels::transposed_forward().empty()) << "a refused plan must not be half applied";
}

TEST(GemmChoice, AutoTimesTheProductsOfTheWorkloadAndSaysWhich) {
  config::Config cfg;
  cfg.train.gemm = config::Gemm::kAuto;
  cfg.data.max_tokens = 64;
  model::ModelConfig small;
  small.d_model = 32;
  small.ffn_dim = 64;
  small.vocab_size = 100;
  const torch::Device cpu(torch::kCPU);
  for (const auto& [workload, products] : {std::pair{GemmWorkload::kTraining, "training products"},
                                           std::pair{GemmWorkload::kDecoding, "decoding products"}}) {
    const GemmDecision d = decide_gemm_backend(cfg, small, cpu, workload);
    if (!model::kernels::onednn_available()) {  // AddressSanitizer builds: MKL, and the reason
      EXPECT_EQ(d.backend, GemmBackend::kMkl);
      EXPECT_NE(d.why.find("oneDNN unavailable"), std::string::npos) << d.why;
      continue;
    }
    EXPECT_NE(d.why.find(products), std::string::npos) << d.why;
    EXPECT_EQ(d.why.rfind(model::kernels::gemm_backend_name(d.backend), 0), 0u) << d.why;  // names its pick first
  }
  // a rank that does not measure takes MKL until rank 0's pick arrives
  EXPECT_EQ(decide_gemm_backend(cfg, small, cpu, GemmWorkload::kDecoding, /*measure_here=*/false).backend,
            GemmBackend::kMkl);
}

}  // namespace
}  // namespace nmt::trainer
