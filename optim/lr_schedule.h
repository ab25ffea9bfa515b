#pragma once
// Learning-rate schedules, counted in updates (u = 1 for the first update).
#include <cstdint>

#include "config/config.h"

namespace nmt::optim {

class LrSchedule {
 public:
  // `max_updates`: the run's update budget (train.max_updates), where a decaying schedule
  // ends unless schedule.total_updates says otherwise.
  LrSchedule(const config::ScheduleConfig& cfg, int64_t d_model, int64_t max_updates);
  // noam:         factor * d_model^-0.5 * min(u^-0.5, u * warmup^-1.5)
  // inverse_sqrt: linear from warmup_init_lr to lr over warmup updates, then lr * sqrt(warmup / u)
  // constant:     lr
  // cosine:       the same warmup, then min_lr + (lr - min_lr) * (1 + cos(pi t)) / 2
  // linear:       the same warmup, then min_lr + (lr - min_lr) * (1 - t)
  //               with t = (u - warmup) / (total - warmup), and min_lr from u = total on
  double lr(int64_t update) const;

 private:
  double warmup(double u) const;  // linear from warmup_init_lr to lr; u < warmup_updates
  config::ScheduleConfig cfg_;
  int64_t d_model_;
  int64_t total_;  // decaying schedules: the update at which min_lr is reached
};

}  // namespace nmt::optim
