#pragma once
// A structural check of a zip archive before LibTorch parses it. LibTorch's reader
// (miniz over torch::jit::VectorReader) trusts the archive's own offsets: a truncated or
// damaged checkpoint made it read past the end of the buffer (heap-buffer-overflow under
// AddressSanitizer, seen in this project's sanitizer run). Every offset and size the
// reader will follow is checked against the file's length here first.
#include <string>
#include <vector>

namespace nmt::checkpoint {

// Empty when `bytes` is a well-formed zip archive (end record, central directory and each
// entry's local header and data inside the file); otherwise what is wrong.
std::string zip_structure_problem(const std::vector<char>& bytes);

}  // namespace nmt::checkpoint
