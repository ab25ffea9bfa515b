#pragma once
// "Averaging by validation" (fairseq's --keep-best-checkpoints, then average_checkpoints.py):
// which updates of a run validated best, read from the validation records a checkpoint
// carries (`metrics_json`), and the files that hold them: valid_<N>.pt for a validation off
// the save interval, update_<N>.pt for one on it.
#include <cstdint>
#include <string>
#include <vector>

namespace nmt::checkpoint {

// The updates of the `n` validation records with the lowest `valid_loss` (ties: the later
// update first), ascending. Fewer when the history has fewer validations. An update
// validated twice counts once, with its last record; a non-finite loss (null) counts nowhere. Throws CheckpointError naming `where`
// when the history is not a JSON array of records.
std::vector<int64_t> best_validated_updates(const std::string& metrics_json, int64_t n, const std::string& where);

// The valid_<N>.pt or update_<N>.pt files of the `n` best validations of a run directory, oldest first,
// read from its last.pt. Throws CheckpointError when there is no last.pt, fewer than `n`
// validations, or a chosen file is gone (train.keep_best keeps them).
std::vector<std::string> best_checkpoints(const std::string& run_dir, int64_t n);

}  // namespace nmt::checkpoint
