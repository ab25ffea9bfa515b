#pragma once
// Training output of rank 0: human lines (stderr and train.log in the run directory) and
// a JSON-lines metrics file, metrics.jsonl, one object per event.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace nmt::trainer {

class TrainLog {
 public:
  // Inactive (prints nothing) on ranks other than 0.
  TrainLog(const std::string& save_dir, bool active);
  ~TrainLog();
  void info(const std::string& line);
  void metrics(const nlohmann::json& record);
  bool active() const { return active_; }

 private:
  bool active_;
  std::FILE* log_ = nullptr;
  std::FILE* jsonl_ = nullptr;
};

}  // namespace nmt::trainer
