#pragma once
// Holding back SIGINT, SIGTERM and SIGHUP while a temporary file or directory exists, so
// that an interrupt cannot leave it behind.
//
// Signal masks are per thread and LibTorch runs worker threads, so masking cannot hold a
// process-directed signal back; instead a handler that only records the signal replaces
// the current one for the guard's life. Two ways to use it:
//  - short critical sections (a checkpoint's write and rename): when the guard ends the
//    previous handlers come back and a recorded signal is sent to the process again, so it
//    then does what it would have done (kill the process, or set the trainer's stop flag)
//    with the file already published or removed: at once where this thread takes it, a
//    moment later where another thread handles signals (signal_thread.h);
//  - long work (preprocess): call throw_if_pending() at safe points; it throws
//    Interrupted, the caller's cleanup runs while the stack unwinds, and main turns it into
//    the exit code 128 + signal. A second Ctrl-C while the guard lives ends the process
//    at once (the default action comes back after the first), as users expect.
#include <csignal>
#include <stdexcept>
#include <string>

#include "base/signal_handlers.h"

namespace nmt::base {

class Interrupted : public std::runtime_error {
 public:
  Interrupted(int signal, const std::string& what);
  int signal() const { return signal_; }

 private:
  int signal_;
};

class SignalDeferral {
 public:
  SignalDeferral();   // records SIGINT/SIGTERM/SIGHUP from now on
  ~SignalDeferral();  // restores the handlers; re-raises a recorded signal unless unwinding
  SignalDeferral(const SignalDeferral&) = delete;
  SignalDeferral& operator=(const SignalDeferral&) = delete;

  int pending() const;  // the signal recorded, or 0
  // Throws Interrupted("<doing>: interrupted by SIGINT") if a signal was recorded.
  void throw_if_pending(const std::string& doing) const;

 private:
  SignalHandlers handlers_;
  int outer_pending_ = 0;  // a nested guard's view of what its enclosing one had recorded
  int unwinding_at_start_ = 0;
};

// "SIGINT", "SIGTERM", ... or "signal N".
std::string signal_name(int signal);

}  // namespace nmt::base
