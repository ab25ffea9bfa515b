#pragma once
// Dynamic loss scaling for fp16 (torch.cuda.amp.GradScaler's rule): the loss is multiplied
// by `scale` before backward; an update whose gradients overflow is skipped and the scale
// halved; after `growth_interval` clean updates in a row the scale doubles. Unlike
// GradScaler the scale has a floor of 1: gradients that are still non-finite there are not
// an overflow that a lower scale fixes, and train.nonfinite decides what happens.
#include <cstdint>

namespace nmt::optim {

class LossScaler {
 public:
  static constexpr double kMinScale = 1.0;

  explicit LossScaler(double init_scale = 65536.0, int64_t growth_interval = 2000)
      : scale_(init_scale), growth_interval_(growth_interval) {}
  double scale() const { return scale_; }
  // After an update with a non-finite gradient: halves the scale and returns true, or
  // returns false (scale unchanged) when it is at the floor.
  bool lower_after_overflow() {
    if (scale_ / 2 < kMinScale) return false;
    scale_ /= 2;
    good_steps_ = 0;
    return true;
  }
  // After an update whose gradients were all finite.
  void clean_step() {
    if (++good_steps_ >= growth_interval_) {
      scale_ *= 2;
      good_steps_ = 0;
    }
  }
  int64_t good_steps() const { return good_steps_; }
  void restore(double scale, int64_t good_steps) {  // from a checkpoint
    scale_ = scale;
    good_steps_ = good_steps;
  }

 private:
  double scale_;
  int64_t growth_interval_, good_steps_ = 0;
};

}  // namespace nmt::optim
