#pragma once
// The training metrics between two log lines. Only applied updates count (a skipped one
// has no loss and no learning rate), and the time spent validating or writing checkpoints
// is taken out, so that tokens/s is training speed.
#include <chrono>
#include <cstdint>

namespace nmt::metrics {

class LogWindow {
 public:
  struct Summary {
    double loss = 0, nll = 0;  // per target token
    double grad_norm = 0;      // mean over the window's updates
    double lr = 0;             // of the window's last applied update
    double tokens_per_s = 0;
    int64_t updates = 0;
  };

  void add(double loss_sum, double nll_sum, int64_t tokens, double grad_norm, double lr);
  bool empty() const { return updates_ == 0; }
  // Time that was not training (validation, checkpoints) leaves the window's clock.
  void exclude(std::chrono::steady_clock::duration paused) { start_ += paused; }
  // The window's figures; the next window starts now.
  Summary close();

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double loss_ = 0, nll_ = 0, grad_norm_ = 0, lr_ = 0;
  int64_t tokens_ = 0, updates_ = 0;
};

// Seconds left until train.max_updates or train.max_minutes ends the run, whichever comes
// first, from the average update time since this process started; NaN without a limit.
double eta_seconds(int64_t max_updates, double max_minutes, int64_t update, int64_t first_update, double elapsed_s);

}  // namespace nmt::metrics
