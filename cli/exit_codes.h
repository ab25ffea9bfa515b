#pragma once
// The exit codes of every executable (docs/USAGE.md, "Errors and exit codes"). A supervisor
// (launch/supervise.sh) restarts a job that ended with a fault and never one that was
// refused for bad input: rerunning cannot fix a config.
#include "dist/dist_error.h"

namespace nmt::cli {

inline constexpr int kExitOk = 0;          // done, or stopped by a signal with last.pt written
inline constexpr int kExitFailed = 1;      // training failed (non-finite loss under train.nonfinite=stop, ...)
inline constexpr int kExitBadInput = 2;    // config, data, checkpoint or command line refused
inline constexpr int kExitFault = dist::kFaultExit;  // 3: a collective timed out or failed; a peer was lost
// 128 + N: interrupted by signal N before the work was done (preprocess), its temporaries
// removed; the shell's own convention (130 for Ctrl-C, 143 for SIGTERM).
inline constexpr int kExitSignalBase = 128;

}  // namespace nmt::cli
