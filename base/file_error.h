#pragma once
// base/'s exception: a file could not be read or written (or checksummed); the message
// names the file. cli::run_main reports it like DataError and CheckpointError, which it
// stood in for before these helpers moved to base/: one line, exit code 2.
#include <stdexcept>

namespace nmt::base {

class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nmt::base
