#pragma once
#include <stdexcept>

#include "base/input_error.h"

namespace nmt::dist {

// The exit code of a process that ends because of a fault of the job (a collective that
// timed out or failed, a lost peer): distinct from bad input (2), so that a supervisor
// knows a restart with --resume auto may help.
constexpr int kFaultExit = 3;

// A failure of the process group or of a collective; the message names the operation.
class DistError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A job set up so that it cannot run (more ranks on a host than GPUs for NCCL, say): the
// user's to fix, so exit 2 as for any bad input, and no restart by a supervisor.
struct DistSetupTag;
using DistSetupError = base::ErrorOf<DistSetupTag>;

}  // namespace nmt::dist
