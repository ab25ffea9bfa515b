#pragma once
// Learning-rate schedules, counted in updates (u = 1 for the first update).
#include <cstdint>

#include "config/config.h"

namespace nmt::trainer {

class LrSchedule {
 public:
  LrSchedule(const config::ScheduleConfig& cfg, int64_t d_model) : cfg_(cfg), d_model_(d_model) {}
  // noam:         factor * d_model^-0.5 * min(u^-0.5, u * warmup^-1.5)
  // inverse_sqrt: linear from warmup_init_lr to lr over warmup updates, then lr * sqrt(warmup / u)
  // constant:     lr
  double lr(int64_t update) const;

 private:
  config::ScheduleConfig cfg_;
  int64_t d_model_;
};

}  // namespace nmt::trainer
