#pragma once
#include <stdexcept>

namespace nmt::dist {

// A failure of the process group or of a collective; the message names the operation.
class DistError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nmt::dist
