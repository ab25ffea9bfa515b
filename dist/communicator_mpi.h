#pragma once
#include "dist/communicator.h"

namespace nmt::dist {

// MPI backend: CPU tensors, non-blocking MPI collectives on a duplicate of MPI_COMM_WORLD.
std::unique_ptr<Communicator> make_mpi_communicator(const ProcessGroup& group, double timeout_s);

}  // namespace nmt::dist
