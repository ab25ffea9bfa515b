#pragma once
// The data layer's exception: every message names the file (and field or line) at fault.
#include "base/input_error.h"

namespace nmt::data {

struct DataErrorTag;
using DataError = base::ErrorOf<DataErrorTag>;

}  // namespace nmt::data
