#include "metrics/train_log.h"

#include <chrono>
#include <ctime>
#include <filesystem>

#include "dist/process_group.h"

namespace nmt::trainer {

TrainLog::TrainLog(const std::string& save_dir, bool active) : active_(active), save_dir_(save_dir) {
  if (!active_) return;
  std::filesystem::create_directories(save_dir);
  log_ = std::fopen((std::filesystem::path(save_dir) / "train.log").c_str(), "a");
  jsonl_ = std::fopen((std::filesystem::path(save_dir) / "metrics.jsonl").c_str(), "a");
}

TrainLog::~TrainLog() {
  if (log_) std::fclose(log_);
  if (jsonl_) std::fclose(jsonl_);
}

void TrainLog::info(const std::string& line) {
  if (!active_) return;
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  std::fprintf(stderr, "%s | %s\n", stamp, line.c_str());
  if (log_) {
    std::fprintf(log_, "%s | %s\n", stamp, line.c_str());
    std::fflush(log_);
  }
}

void TrainLog::metrics(const nlohmann::json& record) {
  if (!active_) return;
  if (jsonl_) {
    std::fprintf(jsonl_, "%s\n", record.dump().c_str());
    std::fflush(jsonl_);
  }
  if (!events_ || !record.contains("update")) return;
  const std::string event = record.value("event", std::string("metrics"));
  const std::string prefix = event + "_";  // valid_loss in a "valid" record -> valid/loss
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [name, value] : record.items()) {
    if (name == "update" || !value.is_number()) continue;
    const std::string shown = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
    scalars.emplace_back(event + "/" + shown, value.get<double>());
  }
  if (!scalars.empty()) events_->add_scalars(record["update"].get<int64_t>(), scalars);
}

void TrainLog::start_tensorboard(int64_t first_step) {
  if (!active_) return;
  events_ = std::make_unique<EventFileWriter>(save_dir_, dist::host_name(), first_step);
  info("tensorboard: writing " + events_->path() + " (tensorboard --logdir " + save_dir_ + ")");
}

}  // namespace nmt::trainer
