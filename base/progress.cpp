#include "base/progress.h"

#include <unistd.h>

#include <cmath>

namespace nmt::base {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm%02lds", s / 3600, s / 60 % 60, s % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof(buf), "%lds", s);
  return buf;
}

Progress::Progress(std::string label, int64_t total, std::FILE* out)
    : label_(std::move(label)), total_(total), out_(out), tty_(isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

void Progress::update(int64_t done) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : NAN;
  if (tty_) {
    if (std::chrono::duration<double>(now - last_).count() < 0.1 && done < total_) return;
    last_ = now;
    const int width = 30, filled = static_cast<int>(frac * width);
    std::fprintf(out_, "\r%s [%s%s] %lld/%lld %3.0f%% ETA %s ", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), 100 * frac, format_duration(eta).c_str());
  } else {
    const int64_t decile = static_cast<int64_t>(frac * 10);
    if (decile == last_decile_) return;
    last_decile_ = decile;
    std::fprintf(out_, "%s: %lld/%lld (%.0f%%), elapsed %s, ETA %s\n", label_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), 100 * frac, format_duration(elapsed).c_str(),
                 format_duration(eta).c_str());
  }
  std::fflush(out_);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  update(total_);
  if (tty_) std::fputc('\n', out_);
}

}  // namespace nmt::base
