#include "runtime/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "config/config_error.h"
#include "dist/process_group.h"

namespace fs = std::filesystem;

namespace nmt::runtime {

RunLock::RunLock(const std::string& save_dir, bool active) {
  if (!active) return;
  const fs::path path = fs::path(save_dir) / ".lock";
  std::error_code ec;
  fs::create_directories(save_dir, ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw config::ConfigError("config key 'train.save_dir' = '" + save_dir + "': cannot open " + path.string() + ": " +
                              std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[256] = {0};
    const ssize_t n = ::pread(fd_, holder, sizeof(holder) - 1, 0);
    std::string who = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "unknown";
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw config::ConfigError("config key 'train.save_dir' = '" + save_dir + "' is in use by another run (" + who +
                                " holds " + path.string() + "); wait for it to end, or choose another train.save_dir");
    throw config::ConfigError("config key 'train.save_dir' = '" + save_dir + "': cannot lock " + path.string() + ": " +
                              std::strerror(err));
  }
  const std::string me = "pid " + std::to_string(getpid()) + " on host " + dist::host_name() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // The lock holds without the note; only the refusal message of a second run is poorer.
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace nmt::runtime
