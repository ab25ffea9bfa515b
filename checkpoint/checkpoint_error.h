#pragma once
#include "base/input_error.h"

namespace nmt::checkpoint {

// A checkpoint that cannot be read or written; the message names the path and the field.
struct CheckpointErrorTag;
using CheckpointError = base::ErrorOf<CheckpointErrorTag>;

}  // namespace nmt::checkpoint
