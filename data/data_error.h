#pragma once
// The data layer's exception: every message names the file (and field or line) at fault.
#include <stdexcept>
#include <string>

namespace nmt::data {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nmt::data
