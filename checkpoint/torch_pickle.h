#pragma once
// torch.save-compatible serialisation of a generic IValue (dicts of tensors, ints,
// floats, strings) that Python's torch.load(weights_only=True) accepts.
//
// torch::pickle_save tags every dict with torch.jit._pickle.restore_type_tag, a global
// that the weights-only unpickler refuses; this writes the same zip archive without
// those tags. torch::pickle_load reads it back (as untyped dicts).
#include <torch/torch.h>

#include <vector>

namespace nmt::checkpoint {

std::vector<char> pickle_save_untagged(const c10::IValue& value);

}  // namespace nmt::checkpoint
