#include "base/stale_temporaries.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <regex>

namespace fs = std::filesystem;

namespace nmt::data {
namespace {

bool alive(long pid) {
  if (pid <= 0) return false;
  if (pid == static_cast<long>(::getpid())) return true;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

std::vector<std::string> remove_stale_temporaries(const std::string& dir, bool all) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return removed;
  static const std::regex temp(R"(\..+\.tmp-([0-9]+)|\.tmp-preprocess-([0-9]+))");
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, temp)) continue;
    const long pid = std::stol(m[1].matched ? m[1].str() : m[2].str());
    if (!all && alive(pid)) continue;
    if (fs::remove_all(entry.path(), ec) > 0 && !ec) removed.push_back(entry.path().string());
  }
  return removed;
}

}  // namespace nmt::data
