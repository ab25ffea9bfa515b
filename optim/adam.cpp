#include "optim/adam.h"

#include <stdexcept>

namespace nmt::optim {

Adam::Adam(std::vector<std::pair<std::string, torch::Tensor>> named_params, const config::OptimConfig& cfg)
    : params_(std::move(named_params)), cfg_(cfg) {
  for (const auto& [name, p] : params_) {
    exp_avg_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    exp_avg_sq_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    steps_.push_back(torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(p.device())));
  }
}

void Adam::step(double lr, const std::vector<bool>& untouched) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> ps, gs, ms, vs, ss;
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& p = params_[i].second;
    if (!p.grad().defined() || (i < untouched.size() && untouched[i])) continue;
    ps.push_back(p);
    gs.push_back(p.grad());
    ms.push_back(exp_avg_[i]);
    vs.push_back(exp_avg_sq_[i]);
    ss.push_back(steps_[i]);
  }
  if (ps.empty()) return;
  torch::_foreach_add_(ss, 1.0);  // the fused kernel reads the step count; callers advance it
  at::_fused_adamw_(ps, gs, ms, vs, /*max_exp_avg_sqs=*/{}, ss, lr, cfg_.beta1, cfg_.beta2, cfg_.weight_decay, cfg_.eps,
                    /*amsgrad=*/false, /*maximize=*/false);
}

void Adam::zero_grad() {
  for (auto& [name, p] : params_)
    p.mutable_grad().reset();
}

c10::Dict<std::string, c10::Dict<std::string, torch::Tensor>> Adam::state_dict() const {
  c10::Dict<std::string, c10::Dict<std::string, torch::Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    c10::Dict<std::string, torch::Tensor> s;
    s.insert("exp_avg", exp_avg_[i].cpu());
    s.insert("exp_avg_sq", exp_avg_sq_[i].cpu());
    s.insert("step", steps_[i].cpu());
    out.insert(params_[i].first, s);
  }
  return out;
}

void Adam::load_state_dict(const c10::Dict<std::string, c10::Dict<std::string, torch::Tensor>>& state) {
  torch::NoGradGuard no_grad;
  if (state.size() != params_.size())
    throw std::runtime_error("optimizer state has " + std::to_string(state.size()) + " parameters, the model has " +
                             std::to_string(params_.size()));
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = params_[i].first;
    auto it = state.find(name);
    if (it == state.end()) throw std::runtime_error("optimizer state lacks parameter '" + name + "'");
    const auto s = it->value();
    for (const char* key : {"exp_avg", "exp_avg_sq", "step"})
      if (!s.contains(key)) throw std::runtime_error("optimizer state of '" + name + "' lacks '" + key + "'");
    if (!s.at("exp_avg").sizes().equals(exp_avg_[i].sizes()) || !s.at("exp_avg_sq").sizes().equals(exp_avg_sq_[i].sizes()))
      throw std::runtime_error("optimizer state of '" + name + "' has the wrong shape");
    exp_avg_[i].copy_(s.at("exp_avg"));
    exp_avg_sq_[i].copy_(s.at("exp_avg_sq"));
    steps_[i].copy_(s.at("step").to(torch::kFloat32).reshape({}));
  }
}

}  // namespace nmt::optim
