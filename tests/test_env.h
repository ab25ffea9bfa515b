#pragma once
#include "dist/process_group.h"

namespace nmt::testing {
// The test binary's process group (created in tests/test_main.cpp).
const dist::ProcessGroup& process_group();
}  // namespace nmt::testing
