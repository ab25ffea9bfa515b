// trainer/gemm_choice: a resumed run keeps the checkpoint's transposed-forward shapes under
// oneDNN, ignores them under MKL, and refuses ones that do not parse.
#include <gtest/gtest.h>

#include <stdexcept>

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

}  // namespace
}  // namespace nmt::trainer
