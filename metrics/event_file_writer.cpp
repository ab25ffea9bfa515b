#include "metrics/event_file_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "base/crc32c.h"
#include "metrics/tensorboard_event.h"

namespace nmt::metrics {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

EventFileWriter::EventFileWriter(const std::string& dir, const std::string& host, int64_t first_step) {
  std::filesystem::create_directories(dir);
  // TensorBoard reads a directory's event files in name order: a zero-padded start time
  // first keeps a resumed run's file after the one it continues.
  char name[64];
  std::snprintf(name, sizeof(name), "events.out.tfevents.%010lld.", static_cast<long long>(now_seconds()));
  path_ = (std::filesystem::path(dir) / (name + host + "." + std::to_string(::getpid()))).string();
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_) throw std::runtime_error(path_ + ": cannot create the TensorBoard event file: " + std::strerror(errno));
  // Version 2: readers then take a SessionLog START as a restart and drop later steps.
  write_record(tensorboard::file_version_event(now_seconds(), "brain.Event:2"));
  write_record(tensorboard::session_start_event(now_seconds(), first_step));
  std::fflush(file_);
}

EventFileWriter::~EventFileWriter() {
  if (file_) std::fclose(file_);
}

void EventFileWriter::add_scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  std::vector<std::pair<std::string, float>> scalars;
  for (const auto& [tag, value] : values) scalars.emplace_back(tag, static_cast<float>(value));
  write_record(tensorboard::scalars_event(now_seconds(), step, scalars));
  if (std::fflush(file_) != 0) throw std::runtime_error(path_ + ": write failed: " + std::strerror(errno));
}

void EventFileWriter::write_record(const std::string& bytes) {
  std::string header;
  put_le(header, bytes.size(), 8);
  put_le(header, base::masked_crc32c(header.data(), 8), 4);
  std::string footer;
  put_le(footer, base::masked_crc32c(bytes.data(), bytes.size()), 4);
  if (std::fwrite(header.data(), 1, header.size(), file_) != header.size() ||
      std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() ||
      std::fwrite(footer.data(), 1, footer.size(), file_) != footer.size())
    throw std::runtime_error(path_ + ": write failed: " + std::strerror(errno));
}

}  // namespace nmt::metrics
