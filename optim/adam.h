#pragma once
// Adam with decoupled weight decay over all parameters at once, through LibTorch's fused
// multi-tensor kernel (one pass over memory per update instead of ~10 small ops per
// parameter). State is kept per parameter name, in the checkpoint's layout.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "config/config.h"

namespace nmt::optim {

class Adam {
 public:
  Adam(std::vector<std::pair<std::string, torch::Tensor>> named_params, const config::OptimConfig& cfg);

  // One update with learning rate `lr` using the parameters' .grad. A parameter whose entry in
  // `untouched` is true keeps its value, moments and step count, as PyTorch's Adam leaves a
  // parameter whose .grad is None (a layer LayerDrop skipped on every rank: without this its
  // old momentum would still move it, and weight decay shrink it). Empty: every parameter.
  void step(double lr, const std::vector<bool>& untouched = {});
  // Releases the gradients (undefined, as PyTorch's zero_grad(set_to_none=True)): the next
  // backward then hands each parameter its gradient tensor instead of adding it to a zeroed
  // one, which saves a fill and an add over every parameter per update. Whoever reads them
  // after a backward must define the ones no backward reached (Trainer::train_step does).
  void zero_grad();

  // checkpoint::Checkpoint state: name -> {"exp_avg", "exp_avg_sq", "step"}.
  c10::Dict<std::string, c10::Dict<std::string, torch::Tensor>> state_dict() const;
  // Throws std::runtime_error naming the parameter when shapes or names differ.
  void load_state_dict(const c10::Dict<std::string, c10::Dict<std::string, torch::Tensor>>& state);


 private:
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_, steps_;
  config::OptimConfig cfg_;
};

}  // namespace nmt::optim
