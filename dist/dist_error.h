#pragma once
#include <stdexcept>

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

}  // namespace nmt::dist
