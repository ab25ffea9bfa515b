#pragma once
// Files written whole or not at all, and the temporaries that make them so. A file is
// written to a temporary beside its final name, synced, renamed into place, and its
// directory synced; preprocess builds its outputs in a temporary directory and renames
// them into place. The temporaries' names are made here and nowhere else:
//   "<dir>/.<name>.tmp-<pid>"       for the file "<dir>/<name>" (checkpoints, hypotheses)
//   "<dir>/.tmp-preprocess-<pid>/"  preprocess's outputs before they are published
// A process killed mid-write leaves one behind; the next run in that directory removes
// those whose writer is gone (remove_stale_temporaries, which reads the same two names).
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace nmt::base {

// Writes `bytes` to `path` atomically (tmp + fsync + rename + fsync dir). SIGINT, SIGTERM
// and SIGHUP are held back meanwhile, so an interrupt cannot leave the temporary behind.
// `before_rename` runs after the temporary is complete and synced, before it replaces
// `path` (tests inject a crash there). Throws FileError naming the path.
void atomic_write(const std::string& path, const std::vector<char>& bytes,
                  const std::function<void()>& before_rename = nullptr);

// atomic_write's steps, for a caller that publishes files together (save_checkpoint: the
// checkpoint and its checksum sidecar). Each throws FileError naming the path.
// Writes `bytes` to a synced temporary beside `path`; returns the temporary's name.
std::filesystem::path write_synced_temp(const std::string& path, const std::vector<char>& bytes);
// Renames `tmp` to `path`; removes `tmp` when that fails.
void publish(const std::filesystem::path& tmp, const std::string& path);
// Syncs directory `dir` ("" = the current one), so that renames into it survive a crash.
void fsync_dir(const std::filesystem::path& dir);

// "<dir>/.tmp-preprocess-<pid>": where preprocess writes its outputs before renaming them
// into `dir`.
std::filesystem::path preprocess_temporary_dir(const std::filesystem::path& dir);

// Removes the temporaries in `dir` whose pid is not a live process on this host; returns
// their paths. `all`: remove every temporary regardless of pid (the caller holds the
// directory's run lock, so no other writer can exist, on any host).
std::vector<std::string> remove_stale_temporaries(const std::string& dir, bool all = false);

}  // namespace nmt::base
