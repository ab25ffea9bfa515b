#include "base/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>

#include "base/file_error.h"
#include "base/signal_deferral.h"

namespace fs = std::filesystem;

namespace nmt::base {
namespace {

// The two names of the header, made and read only here.
fs::path temporary_file_for(const fs::path& target) {
  return target.parent_path() / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()));
}
const std::regex& temporary_name() {
  static const std::regex temp(R"(\..+\.tmp-([0-9]+)|\.tmp-preprocess-([0-9]+))");
  return temp;
}

void write_all(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw FileError(path + ": write failed: " + std::strerror(errno));
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

bool alive(long pid) {
  if (pid <= 0) return false;
  if (pid == static_cast<long>(::getpid())) return true;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

fs::path preprocess_temporary_dir(const fs::path& dir) {
  return dir / (".tmp-preprocess-" + std::to_string(::getpid()));
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

fs::path write_synced_temp(const std::string& path, const std::vector<char>& bytes) {
  const fs::path tmp = temporary_file_for(fs::path(path));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw FileError(tmp.string() + ": cannot create: " + std::strerror(errno));
  try {
    write_all(fd, bytes.data(), bytes.size(), tmp.string());
    if (::fsync(fd) != 0) throw FileError(tmp.string() + ": fsync failed: " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  return tmp;
}

void publish(const fs::path& tmp, const std::string& path) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw FileError(path + ": rename failed: " + std::strerror(errno));
  }
}

void atomic_write(const std::string& path, const std::vector<char>& bytes, const std::function<void()>& before_rename) {
  // An interrupt during the write waits until the file is published (or removed): it
  // cannot leave a temporary behind, and takes effect right after.
  SignalDeferral interrupts;
  const fs::path tmp = write_synced_temp(path, bytes);
  if (before_rename) before_rename();
  publish(tmp, path);
  fsync_dir(fs::path(path).parent_path());
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir, bool all) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return removed;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, temporary_name())) continue;
    const long pid = std::stol(m[1].matched ? m[1].str() : m[2].str());
    if (!all && alive(pid)) continue;
    if (fs::remove_all(entry.path(), ec) > 0 && !ec) removed.push_back(entry.path().string());
  }
  return removed;
}

}  // namespace nmt::base
