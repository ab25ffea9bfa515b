#pragma once
#include <stdexcept>
#include <string>

namespace nmt::config {

// A configuration problem; the message names the key, the value, and where it was set.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nmt::config
