#include "runtime/shared_paths.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "base/sha256.h"
#include "config/config_error.h"
#include "data/shard_format.h"

namespace fs = std::filesystem;

namespace nmt::runtime {
namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// "rank|host|text" per rank, split back.
struct Seen {
  int rank;
  std::string host, text;
};
std::vector<Seen> gather(dist::Communicator& comm, const std::string& text) {
  std::vector<Seen> out;
  int r = 0;
  for (const std::string& s : comm.all_gather_bytes(dist::host_name() + '\n' + text)) {
    const size_t nl = s.find('\n');
    out.push_back({r++, s.substr(0, nl), s.substr(nl + 1)});
  }
  return out;
}

}  // namespace

void check_every_rank_sees_the_run(const config::Config& cfg, dist::Communicator& comm) {
  if (comm.world_size() == 1) return;
  comm.set_phase("start: checking that every rank sees data.shard_dir and train.save_dir");
  // 1. The same shards: the manifest names every shard's sha256, so its own hash is the data's.
  const fs::path manifest = fs::path(cfg.data.shard_dir) / data::kManifestName;
  const std::string bytes = read_file(manifest);
  const auto manifests = gather(comm, bytes.empty() ? "none" : base::sha256_hex(bytes));
  auto describe = [&](const Seen& s) {
    return s.text == "none" ? fmt::format("no readable {}", manifest.string())
                            : fmt::format("manifest sha256 {}...", s.text.substr(0, 12));
  };
  std::vector<std::string> bad;
  for (const Seen& s : manifests)
    if (s.text != manifests[0].text)
      bad.push_back(fmt::format("rank {} on host {} ({}, rank 0 on host {}: {})", s.rank, s.host, describe(s),
                                manifests[0].host, describe(manifests[0])));
  if (!bad.empty())
    throw config::ConfigError(fmt::format("config key 'data.shard_dir' = '{}': {} sees different data than rank 0: put the "
                                  "shards on storage every host mounts at the same path, or copy them identically",
                                  cfg.data.shard_dir, fmt::join(bad, "; ")));

  // 2. The same save_dir: rank 0 writes a file with a fresh token, every rank reads it.
  const fs::path dir(cfg.train.save_dir);
  std::string token;
  if (comm.rank() == 0) {
    std::random_device rd;
    token = fmt::format("{:016x}{:08x}", (static_cast<uint64_t>(rd()) << 32) | rd(), static_cast<unsigned>(getpid()));
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::ofstream(dir / (".shared-check-" + token)) << token;
  }
  token = comm.all_gather_bytes(token)[0];
  const fs::path probe = dir / (".shared-check-" + token);
  const auto seen = gather(comm, read_file(probe) == token ? "yes" : "no");
  if (comm.rank() == 0) fs::remove(probe);
  bad.clear();
  for (const Seen& s : seen)
    if (s.text != "yes") bad.push_back(fmt::format("rank {} on host {}", s.rank, s.host));
  if (!bad.empty())
    throw config::ConfigError(fmt::format("config key 'train.save_dir' = '{}': {} cannot read the file rank 0 (host {}) wrote "
                                  "there ({}); every rank reads the checkpoint it resumes from, so train.save_dir must be "
                                  "on storage every host mounts at the same path",
                                  cfg.train.save_dir, fmt::join(bad, ", "), seen[0].host, probe.string()));
}

}  // namespace nmt::runtime
