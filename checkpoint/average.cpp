#include "checkpoint/average.h"

#include <algorithm>
#include <filesystem>
#include <regex>

namespace fs = std::filesystem;

namespace nmt::checkpoint {

std::vector<std::string> last_checkpoints(const std::string& run_dir, int64_t n) {
  if (!fs::is_directory(run_dir)) throw CheckpointError(run_dir + ": run directory does not exist");
  static const std::regex re("update_([0-9]+)\\.pt");
  std::vector<std::pair<int64_t, std::string>> found;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, re)) found.emplace_back(std::stoll(m[1]), e.path().string());
  }
  std::sort(found.begin(), found.end());
  if (static_cast<int64_t>(found.size()) < n)
    throw CheckpointError(run_dir + ": asked for the last " + std::to_string(n) + " update_<N>.pt checkpoints, found " +
                          std::to_string(found.size()));
  std::vector<std::string> out;
  for (size_t i = found.size() - static_cast<size_t>(n); i < found.size(); ++i) out.push_back(found[i].second);
  return out;
}

Checkpoint average_checkpoints(const std::vector<std::string>& paths) {
  if (paths.empty()) throw CheckpointError("average: no checkpoints given");
  std::vector<std::pair<std::string, torch::Tensor>> sums;
  Checkpoint last;
  for (size_t k = 0; k < paths.size(); ++k) {
    Checkpoint c = load_checkpoint(paths[k]);
    if (k == 0) {
      for (const auto& kv : c.model) sums.emplace_back(kv.key(), kv.value().to(torch::kFloat64));
    } else {
      if (c.vocab_sha256 != last.vocab_sha256)
        throw CheckpointError(paths[k] + ": field 'vocab_sha256' differs from " + paths[0] + "'s");
      if (c.model.size() != sums.size())
        throw CheckpointError(paths[k] + ": has " + std::to_string(c.model.size()) + " parameters, " + paths[0] +
                              " has " + std::to_string(sums.size()));
      for (auto& [name, sum] : sums) {
        auto it = c.model.find(name);
        if (it == c.model.end()) throw CheckpointError(paths[k] + ": lacks parameter '" + name + "'");
        if (!it->value().sizes().equals(sum.sizes()))
          throw CheckpointError(paths[k] + ": parameter '" + name + "' has another shape than in " + paths[0]);
        sum += it->value().to(torch::kFloat64);
      }
    }
    last = std::move(c);
  }
  for (auto& [name, sum] : sums) {
    const auto dtype = last.model.at(name).scalar_type();
    last.model.insert_or_assign(name, (sum / static_cast<double>(paths.size())).to(dtype));
  }
  return last;
}

}  // namespace nmt::checkpoint
