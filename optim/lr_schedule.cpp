#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace nmt::optim {

using config::ScheduleType;

constexpr double kPi = 3.14159265358979323846;

LrSchedule::LrSchedule(const config::ScheduleConfig& cfg, int64_t d_model, int64_t max_updates)
    : cfg_(cfg), d_model_(d_model), total_(cfg.total_updates > 0 ? cfg.total_updates : max_updates) {}

double LrSchedule::warmup(double u) const {
  return cfg_.warmup_init_lr + (cfg_.lr - cfg_.warmup_init_lr) * u / static_cast<double>(cfg_.warmup_updates);
}

double LrSchedule::lr(int64_t update) const {
  const double u = static_cast<double>(std::max<int64_t>(update, 1));
  const double w = static_cast<double>(std::max<int64_t>(cfg_.warmup_updates, 1));
  const bool warming = cfg_.warmup_updates > 0 && u < w;
  switch (cfg_.type) {
    case ScheduleType::kNoam:
      return cfg_.factor * std::pow(static_cast<double>(d_model_), -0.5) *
             std::min(std::pow(u, -0.5), u * std::pow(w, -1.5));
    case ScheduleType::kInverseSqrt:
      return warming ? warmup(u) : cfg_.lr * std::sqrt(w / u);
    case ScheduleType::kConstant:
      return cfg_.lr;
    case ScheduleType::kCosine:
    case ScheduleType::kLinear: {
      if (warming) return warmup(u);
      const double start = static_cast<double>(cfg_.warmup_updates);
      const double t = std::min(1.0, (u - start) / std::max(1.0, static_cast<double>(total_) - start));
      const double left = cfg_.type == ScheduleType::kCosine ? 0.5 * (1.0 + std::cos(kPi * t)) : 1.0 - t;
      return cfg_.min_lr + (cfg_.lr - cfg_.min_lr) * left;
    }
  }
  return cfg_.lr;
}

}  // namespace nmt::optim
