#include "trainer/train_log.h"

#include <chrono>
#include <ctime>
#include <filesystem>

namespace nmt::trainer {

TrainLog::TrainLog(const std::string& save_dir, bool active) : active_(active) {
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
  if (!active_ || !jsonl_) return;
  std::fprintf(jsonl_, "%s\n", record.dump().c_str());
  std::fflush(jsonl_);
}

}  // namespace nmt::trainer
