#pragma once
// Every rank's bytes, in rank order, over an MPI communicator: how both backends gather
// small host-side objects (hypotheses, generator states, flags). Internal to dist/.
#include <mpi.h>

#include <string>
#include <vector>

namespace nmt::dist {

std::vector<std::string> gather_bytes(const std::string& mine, int world, MPI_Comm comm);

}  // namespace nmt::dist
