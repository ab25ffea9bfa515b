#pragma once
// TensorBoard event files: `events.out.tfevents.<unix time>.<host>.<pid>` in a run
// directory, a sequence of records (TFRecord framing: length, masked CRC-32C of the
// length, the serialized Event, masked CRC-32C of it) that `tensorboard --logdir` and
// its EventAccumulator read.
//
// Each process writes a new file that begins with a SessionLog START at the first step
// it will log: TensorBoard then drops what an earlier, interrupted process logged from
// that step on (its "orphaned data" purge), so a resumed run shows each step once.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace nmt::metrics {

class EventFileWriter {
 public:
  // Creates the file in `dir` (`host` goes into its name, as TensorFlow's writers do);
  // throws std::runtime_error naming the path on failure.
  EventFileWriter(const std::string& dir, const std::string& host, int64_t first_step);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // One Event at `step` holding a scalar Summary value per (tag, value); flushed, so a
  // live TensorBoard sees it at once and a crash loses nothing already logged.
  void add_scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& bytes);
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace nmt::metrics
