#include "metrics/log_window.h"

#include <algorithm>
#include <cmath>

#include "base/elapsed.h"

namespace nmt::metrics {

void LogWindow::add(double loss_sum, double nll_sum, int64_t tokens, double grad_norm, double lr) {
  loss_ += loss_sum;
  nll_ += nll_sum;
  tokens_ += tokens;
  grad_norm_ += grad_norm;
  lr_ = lr;
  ++updates_;
}

LogWindow::Summary LogWindow::close() {
  Summary s;
  s.loss = loss_ / static_cast<double>(tokens_);
  s.nll = nll_ / static_cast<double>(tokens_);
  s.grad_norm = grad_norm_ / static_cast<double>(updates_);
  s.lr = lr_;
  s.tokens_per_s = static_cast<double>(tokens_) / base::seconds_since(start_);
  s.updates = updates_;
  *this = LogWindow();
  return s;
}

double eta_seconds(int64_t max_updates, double max_minutes, int64_t update, int64_t first_update, double elapsed_s) {
  double eta = NAN;
  if (max_updates > 0) {
    const double per_update = elapsed_s / static_cast<double>(update - first_update);
    eta = per_update * static_cast<double>(max_updates - update);
  }
  if (max_minutes > 0) {
    const double left = max_minutes * 60 - elapsed_s;
    eta = std::isnan(eta) ? left : std::min(eta, left);
  }
  return eta;
}

}  // namespace nmt::metrics
