#pragma once
#include <cstdint>
#include <string>

namespace nmt::base {

// FNV-1a: a stable 64-bit hash of a string (std::hash is not the same everywhere), for seeds
// that must not change between compilers and machines (preprocess's keyed draws).
inline uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace nmt::base
