#pragma once
// Every rank's bytes, in rank order, over an MPI communicator: how both backends gather
// small host-side objects (hypotheses, generator states, flags). Internal to dist/.
#include <mpi.h>

#include <string>
#include <vector>

#include "dist/watchdog.h"

namespace nmt::dist {

// Non-blocking collectives waited on through `watchdog`, so a hung peer times out here too.
std::vector<std::string> gather_bytes(const std::string& mine, int world, MPI_Comm comm, Watchdog& watchdog);

// Waits for `req` through `watchdog`; MPI errors become DistError naming `op`.
void wait_request(MPI_Request& req, const std::string& op, Watchdog& watchdog);

// Throws DistError naming `call` unless `rc` is MPI_SUCCESS (a collective's posting).
void check_posted(int rc, const char* call);

// After a request failed with `rc`: marks the collectives broken and throws DistError
// naming `op`, the rank and the phase.
[[noreturn]] void throw_request_error(int rc, const std::string& op, const Watchdog& watchdog);

// MPI's text for an error code.
std::string mpi_error_text(int code);

}  // namespace nmt::dist
