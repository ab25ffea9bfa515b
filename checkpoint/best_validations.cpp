#include "checkpoint/best_validations.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"

namespace fs = std::filesystem;

namespace nmt::checkpoint {
namespace {

// update -> valid_loss of every validation record, the last record of an update winning.
std::map<int64_t, double> validation_losses(const std::string& metrics_json, const std::string& where) {
  nlohmann::json history;
  try {
    history = nlohmann::json::parse(metrics_json);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(where + ": field 'metrics' is not JSON (" + e.what() + ")");
  }
  if (!history.is_array()) throw CheckpointError(where + ": field 'metrics' is not a JSON array of records");
  std::map<int64_t, double> losses;
  for (const auto& rec : history) {
    if (!rec.is_object() || rec.value("event", "") != "valid") continue;
    // A non-finite loss is written as null (JSON has no NaN): such a validation ranks nowhere.
    if (rec.contains("update") && rec.contains("valid_loss") && rec["valid_loss"].is_null()) continue;
    if (!rec.contains("update") || !rec["update"].is_number_integer() || !rec.contains("valid_loss") ||
        !rec["valid_loss"].is_number())
      throw CheckpointError(where + ": field 'metrics' has a validation record without an integer 'update' and a "
                                    "numeric 'valid_loss': " + rec.dump());
    losses[rec["update"].get<int64_t>()] = rec["valid_loss"].get<double>();
  }
  return losses;
}

}  // namespace

std::vector<int64_t> best_validated_updates(const std::string& metrics_json, int64_t n, const std::string& where) {
  std::vector<std::pair<double, int64_t>> ranked;
  for (const auto& [update, loss] : validation_losses(metrics_json, where)) ranked.emplace_back(loss, -update);
  std::sort(ranked.begin(), ranked.end());  // lowest loss first; of equal losses the later update
  std::vector<int64_t> out;
  for (size_t i = 0; i < ranked.size() && static_cast<int64_t>(i) < n; ++i) out.push_back(-ranked[i].second);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> best_checkpoints(const std::string& run_dir, int64_t n) {
  if (!fs::is_directory(run_dir)) throw CheckpointError(run_dir + ": run directory does not exist");
  const fs::path last = fs::path(run_dir) / "last.pt";
  if (!fs::exists(last))
    throw CheckpointError(last.string() + ": not found; --best reads the run's validations from its last.pt");
  const std::vector<int64_t> updates = best_validated_updates(load_checkpoint(last.string()).metrics_json, n,
                                                              last.string());
  if (static_cast<int64_t>(updates.size()) < n)
    throw CheckpointError(fmt::format("{}: asked for the {} best validations, the run has {}", last.string(), n,
                                      updates.size()));
  std::vector<std::string> out;
  for (int64_t u : updates) {
    // A validation on the save interval is held by the periodic file, else by valid_<N>.pt
    // (runs written before valid_<N>.pt named those update_<N>.pt too).
    fs::path p = fs::path(run_dir) / fmt::format("valid_{}.pt", u);
    if (!fs::exists(p)) p = fs::path(run_dir) / fmt::format("update_{}.pt", u);
    if (!fs::exists(p))
      throw CheckpointError(fmt::format("{}/valid_{}.pt (or update_{}.pt): not found, yet update {} is among the "
                                        "run's {} best validations; train with train.keep_best >= {} to keep them",
                                        run_dir, u, u, u, n, n));
    out.push_back(p.string());
  }
  return out;
}

}  // namespace nmt::checkpoint
