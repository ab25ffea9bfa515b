#pragma once
// One run per train.save_dir: rank 0 holds an advisory lock (flock) on save_dir/.lock for
// the job's life, before anything is written there, so a second `train` on the same
// directory is refused instead of interleaving checkpoints and logs. The kernel drops the
// lock when its holder dies, however it dies: a stale lock never blocks.
#include <string>

namespace nmt::runtime {

class RunLock {
 public:
  // Takes the lock when `active` (rank 0); throws ConfigError naming the holder (pid and
  // host, as it wrote them) when another process has it.
  RunLock(const std::string& save_dir, bool active);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace nmt::runtime
