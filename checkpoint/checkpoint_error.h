#pragma once
#include <stdexcept>

namespace nmt::checkpoint {

// A checkpoint that cannot be read or written; the message names the path and the field.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nmt::checkpoint
