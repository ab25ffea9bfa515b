#pragma once
// Temporaries this project writes beside their final names and renames into place:
// "<dir>/.<name>.tmp-<pid>" (checkpoints) and "<dir>/.tmp-preprocess-<pid>/" (preprocess).
// A process killed mid-write leaves one behind; the next run in that directory removes
// those whose writer is gone.
#include <string>
#include <vector>

namespace nmt::data {

// Removes the temporaries in `dir` whose pid is not a live process on this host; returns
// their paths. `all`: remove every temporary regardless of pid (the caller holds the
// directory's run lock, so no other writer can exist, on any host).
std::vector<std::string> remove_stale_temporaries(const std::string& dir, bool all = false);

}  // namespace nmt::data
