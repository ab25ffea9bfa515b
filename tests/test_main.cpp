// GoogleTest main with the process group alive for the whole binary: MPI may be
// initialised once per process, and the trainer and the communicators need it.
#include <gtest/gtest.h>

#include "dist/process_group.h"
#include "tests/test_env.h"

namespace nmt::testing {
namespace {
dist::ProcessGroup* g_group = nullptr;
}
const dist::ProcessGroup& process_group() { return *g_group; }
}  // namespace nmt::testing

int main(int argc, char** argv) {
  nmt::dist::ProcessGroup group(&argc, &argv);
  nmt::testing::g_group = &group;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
