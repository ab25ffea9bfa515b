#include "metrics/train_log.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

#include "base/file_error.h"
#include "dist/process_group.h"

namespace nmt::metrics {

namespace {

// Opened at start like the checkpoints' directory: an output that cannot be written is a
// refusal before the first update, not a run that leaves no log behind.
std::FILE* open_for_appending(const std::string& save_dir, const char* name) {
  const std::string path = (std::filesystem::path(save_dir) / name).string();
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f)
    throw base::FileError("config key 'train.save_dir' = '" + save_dir + "': cannot open " + path +
                              " for appending: " + std::strerror(errno));
  return f;
}

void flush_or_throw(std::FILE* f, const std::string& path) {
  if (std::fflush(f) != 0 || std::ferror(f))
    throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
}

}  // namespace

TrainLog::TrainLog(const std::string& save_dir, bool active) : active_(active), save_dir_(save_dir) {
  if (!active_) return;
  std::filesystem::create_directories(save_dir);
  log_ = open_for_appending(save_dir, "train.log");
  try {
    jsonl_ = open_for_appending(save_dir, "metrics.jsonl");
  } catch (...) {
    std::fclose(log_);
    throw;
  }
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
  std::fprintf(log_, "%s | %s\n", stamp, line.c_str());
  flush_or_throw(log_, (std::filesystem::path(save_dir_) / "train.log").string());
}

void TrainLog::metrics(const nlohmann::json& record) {
  if (!active_) return;
  std::fprintf(jsonl_, "%s\n", record.dump().c_str());
  flush_or_throw(jsonl_, (std::filesystem::path(save_dir_) / "metrics.jsonl").string());
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

}  // namespace nmt::metrics
