#pragma once
// Training output of rank 0: human lines (stderr and train.log in the run directory), a
// JSON-lines metrics file, metrics.jsonl, one object per event, and (train.tensorboard)
// the same numbers as TensorBoard scalars.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "metrics/event_file_writer.h"

namespace nmt::metrics {

class TrainLog {
 public:
  // Inactive (prints nothing) on ranks other than 0.
  TrainLog(const std::string& save_dir, bool active);
  ~TrainLog();
  void info(const std::string& line);
  // Appends the record to metrics.jsonl and, once start_tensorboard() ran, writes each of
  // its numbers but "update" (the step) as the scalar "<event>/<name>": train/loss,
  // train/lr, train/grad_norm, valid/loss (from valid_loss), valid/bleu, ...
  void metrics(const nlohmann::json& record);
  // Opens a new event file whose first step is `first_step` (the update after the one
  // training starts or resumes from).
  void start_tensorboard(int64_t first_step);
  bool active() const { return active_; }

 private:
  bool active_;
  std::FILE* log_ = nullptr;
  std::FILE* jsonl_ = nullptr;
  std::unique_ptr<EventFileWriter> events_;
  std::string save_dir_;
};

}  // namespace nmt::metrics
