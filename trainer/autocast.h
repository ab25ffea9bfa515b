#pragma once
// Mixed precision for a scope (train.precision): LibTorch's autocast, the C++ face of
// torch.autocast. fp32 = no-op; so is bf16 on a CPU, whose bf16 products are our own linear
// layers' (kernels/linear.h, set at start) while everything else stays float32.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "config/config.h"

namespace nmt::trainer {

class AutocastScope {
 public:
  AutocastScope(const torch::Device& device, config::Precision precision) : type_(device.type()) {
    if (precision == config::Precision::kFp32) return;
    if (precision == config::Precision::kBf16 && device.is_cpu()) return;
    on_ = true;
    prev_enabled_ = at::autocast::is_autocast_enabled(type_);
    prev_dtype_ = at::autocast::get_autocast_dtype(type_);
    at::autocast::set_autocast_dtype(type_, precision == config::Precision::kBf16 ? at::kBFloat16 : at::kHalf);
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();  // casts of weights are per step
    at::autocast::set_autocast_enabled(type_, prev_enabled_);
    at::autocast::set_autocast_dtype(type_, prev_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType type_;
  bool on_ = false, prev_enabled_ = false;
  at::ScalarType prev_dtype_ = at::kFloat;
};

}  // namespace nmt::trainer
