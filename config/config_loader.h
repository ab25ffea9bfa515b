#pragma once
// YAML -> Config: load a file, apply `a.b=value` overrides, validate once, print back.
#include <string>
#include <vector>

#include "config/config.h"

namespace nmt::config {

// What a program needs to exist on disk, checked by validate().
enum class Needs {
  kNothing,    // only value checks (ranges, choices)
  kRawData,    // preprocess: data.raw_dir, and data.spm_model when set
  kShards,     // train/evaluate/translate: data.shard_dir with its manifest.json
};

// Loads `path` (every key must be known and well-typed), then applies `overrides`.
// Throws ConfigError naming key, value, file and line.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Parses YAML text as if it came from `name` (tests, --print-config round trip).
Config load_config_text(const std::string& yaml, const std::string& name,
                        const std::vector<std::string>& overrides = {});
// The config stored in a checkpoint (its config_yaml): load_config_text, except that values an
// earlier version wrote and this one refuses from users (a temperature of 0 for off) read as
// what they meant then.
Config load_stored_config(const std::string& yaml, const std::string& name);
// Applies one `a.b=value` override.
void apply_override(Config& cfg, const std::string& assignment);
// Ranges, choices, cross-field rules, and the files `needs` names. Throws ConfigError.
void validate(const Config& cfg, Needs needs);
// The update at which a decaying schedule (cosine, linear) reaches schedule.min_lr:
// schedule.total_updates, else train.max_updates; 0 for schedules that do not decay.
int64_t schedule_end_update(const Config& cfg);
// The resolved configuration as YAML that load_config_text() reads back to the same values.
std::string to_yaml(const Config& cfg);
// All keys, in printing order.
std::vector<std::string> config_keys();

// What docs/USAGE.md's key table is generated from (tools/config_keys.py, via train
// --config-keys): each key's type, default (as --print-config writes it) and accepted values
// (a range, the names of a choice; "" = any), read off the same field table that loads and
// validates, so the table cannot drift from the code.
struct KeyInfo {
  std::string key, type, default_text, allowed;
};
std::vector<KeyInfo> describe_keys();

}  // namespace nmt::config
