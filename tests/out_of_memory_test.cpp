// A failed allocation is one message and exit code 1, never abort() with a backtrace, and
// the symbol clash that would turn it into abort() stays resolved
// (data/sentencepiece_symbol_clash.cpp).
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <torch/torch.h>

#include <sstream>
#include <string>

#include "cli/cli.h"
#include "cli/exit_codes.h"

TEST(OutOfMemory, SentencePieceLeavesLibTorchsEnforceFlagAlone) {
  // libsentencepiece is loaded and its static constructors have run (it is linked in);
  // were its FLAGS_minloglevel object built over c10's, it would set this flag.
  sentencepiece::SentencePieceProcessor loaded;
  (void)loaded;
  EXPECT_FALSE(FLAGS_caffe2_use_fatal_for_enforce);
}

TEST(OutOfMemory, AFailedAllocationIsOneMessageAndExitCode1) {
  testing::internal::CaptureStderr();
  // 2^46 floats (256 TiB) exceed any x86-64 address space: malloc fails on every machine.
  const int rc = nmt::cli::run_main("train", [] {
    auto t = torch::empty({int64_t{1} << 46}, torch::kFloat32);
    return static_cast<int>(t.numel() > 0);
  });
  // Under AddressSanitizer its runtime adds a "==PID==WARNING: ... failed to allocate" line
  // of its own: only what the program printed is checked.
  std::string err;
  std::istringstream captured(testing::internal::GetCapturedStderr());
  for (std::string line; std::getline(captured, line);)
    if (line.rfind("==", 0) != 0) err += line + "\n";
  EXPECT_EQ(rc, nmt::cli::kExitFailed);
  EXPECT_EQ(err.rfind("train: error: out of memory: ", 0), 0u) << err;
  EXPECT_NE(err.find("DefaultCPUAllocator: can't allocate memory"), std::string::npos) << err;
  EXPECT_NE(err.find("(lower data.max_tokens, eval.max_tokens or the model's sizes)"), std::string::npos) << err;
  EXPECT_EQ(err.find("frame #"), std::string::npos) << "a backtrace reached the user: " << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}
