#pragma once
// The errors a user fixes in their input: a config key or value, a data file, a checkpoint,
// any file that cannot be read or written. The message names what and where; main reports
// each as one line and exit code 2 (cli/exit_codes.h), whichever floor threw it.
//
// Each floor throws its own type, ErrorOf<its tag> (base::FileError, config::ConfigError,
// data::DataError, checkpoint::CheckpointError), so that a test or a caller can tell where an
// error came from, while main catches them all as InputError.
#include <stdexcept>
#include <string>

namespace nmt::base {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

template <class Floor>
class ErrorOf : public InputError {
 public:
  using InputError::InputError;
};

struct FileErrorTag;
using FileError = ErrorOf<FileErrorTag>;  // base/'s own: a file could not be read, written or checksummed

}  // namespace nmt::base
