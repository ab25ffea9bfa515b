#pragma once
// Argument parsing the benchmark programs share.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>

namespace nmt::bench {

// argv[i] as a positive integer, `fallback` when absent; anything else is refused by name.
inline int64_t positive_arg(int argc, char** argv, int i, const char* name, int64_t fallback) {
  if (argc <= i) return fallback;
  const std::string text = argv[i];
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value <= 0)
    throw std::invalid_argument(std::string(name) + " must be a positive integer, got '" + text + "'");
  return value;
}

// Runs a benchmark's body and turns its exceptions into one message naming the program:
// exit 2 for a bad argument (std::invalid_argument), 1 for anything else.
inline int run_bench_main(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace nmt::bench
