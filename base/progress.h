#pragma once
// Progress of a long loop: a live bar with ETA on a terminal, a plain line every ~10%
// (or every `min_seconds`) otherwise, so log files stay readable.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace nmt::base {

class Progress {
 public:
  Progress(std::string label, int64_t total, std::FILE* out = stderr);
  void update(int64_t done);
  void finish();

 private:
  std::string label_;
  int64_t total_;
  std::FILE* out_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_;
  int64_t last_decile_ = -1;
  bool finished_ = false;
};

std::string format_duration(double seconds);

}  // namespace nmt::base
