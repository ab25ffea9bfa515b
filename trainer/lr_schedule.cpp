#include "trainer/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace nmt::trainer {

double LrSchedule::lr(int64_t update) const {
  const double u = static_cast<double>(std::max<int64_t>(update, 1));
  const double w = static_cast<double>(std::max<int64_t>(cfg_.warmup_updates, 1));
  if (cfg_.type == "noam")
    return cfg_.factor * std::pow(static_cast<double>(d_model_), -0.5) * std::min(std::pow(u, -0.5), u * std::pow(w, -1.5));
  if (cfg_.type == "inverse_sqrt") {
    if (cfg_.warmup_updates > 0 && u < w) return cfg_.warmup_init_lr + (cfg_.lr - cfg_.warmup_init_lr) * u / w;
    return cfg_.lr * std::sqrt(w / u);
  }
  return cfg_.lr;  // constant
}

}  // namespace nmt::trainer
