#pragma once
#include <chrono>

namespace nmt::base {

// Seconds since `t` on the steady clock: every duration the trainer logs or reports.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace nmt::base
