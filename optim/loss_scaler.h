#pragma once
// Dynamic loss scaling for fp16 (the GradScaler rule): the loss is multiplied by `scale`
// before backward; an update whose gradients overflow is skipped and the scale halved;
// after `growth_interval` clean updates in a row the scale doubles.
#include <cstdint>

namespace nmt::trainer {

class LossScaler {
 public:
  explicit LossScaler(double init_scale = 65536.0, int64_t growth_interval = 2000)
      : scale_(init_scale), growth_interval_(growth_interval) {}
  double scale() const { return scale_; }
  // Call once per update with whether any gradient was Inf/NaN. Returns true when the
  // update must be skipped.
  bool update(bool found_inf) {
    if (found_inf) {
      scale_ /= 2;
      good_steps_ = 0;
      ++skipped_;
      return true;
    }
    if (++good_steps_ >= growth_interval_) {
      scale_ *= 2;
      good_steps_ = 0;
    }
    return false;
  }
  int64_t skipped() const { return skipped_; }
  int64_t good_steps() const { return good_steps_; }
  void restore(double scale, int64_t good_steps) {  // from a checkpoint
    scale_ = scale;
    good_steps_ = good_steps;
  }

 private:
  double scale_;
  int64_t growth_interval_, good_steps_ = 0, skipped_ = 0;
};

}  // namespace nmt::trainer
