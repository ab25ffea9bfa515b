#pragma once
// Asynchronous signals (a stop request, Ctrl-C, a hang-up) handled on one idle thread of
// their own. Linux gives a process-directed signal to any thread that does not block it, so
// without this the stop handler ran on whichever thread was busy, often one inside
// oneDNN's JIT-compiled GEMM; a SIGTERM then crashed train with heap corruption in 3 of 6
// stops under train.gemm=onednn (0 of 6 under mkl). Blocked everywhere else, the signals
// keep every handler and default action they had; they only interrupt a thread doing nothing.
#include <initializer_list>

namespace nmt::base {

// Call first in main, before any other thread exists: later threads inherit the calling
// thread's mask, which blocks `signals`; one detached thread unblocks them and sleeps.
void handle_signals_on_own_thread(std::initializer_list<int> signals);

}  // namespace nmt::base
