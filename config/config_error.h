#pragma once
#include "base/input_error.h"

namespace nmt::config {

// A configuration problem; the message names the key, the value, and where it was set.
struct ConfigErrorTag;
using ConfigError = base::ErrorOf<ConfigErrorTag>;

}  // namespace nmt::config
