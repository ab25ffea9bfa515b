#pragma once
// Preemption: SIGUSR1 (which mpirun forwards to every rank), SIGTERM (which SLURM sends
// to the ranks themselves) and a first SIGINT (Ctrl-C) set a flag instead of killing the process; the training
// loop reads it between updates and all ranks agree, through an all-reduce, to stop
// after the same update. The handler can only touch a sig_atomic_t, hence the one
// process-wide flag behind this class.
#include <csignal>

#include "base/signal_handlers.h"

namespace nmt::base {

class StopSignal {
 public:
  StopSignal();   // installs the handlers
  ~StopSignal();  // restores the previous ones
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;
  // The signal number received, or 0.
  int received() const;

 private:
  SignalHandlers handlers_;
};

}  // namespace nmt::base
