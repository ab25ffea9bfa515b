#include "dist/mpi_gather.h"

namespace nmt::dist {

std::vector<std::string> gather_bytes(const std::string& mine, int world, MPI_Comm comm) {
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(world), displs(world);
  MPI_Allgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < world; ++r) {
    displs[r] = total;
    total += sizes[r];
  }
  std::string all(total, '\0');
  MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), displs.data(), MPI_CHAR, comm);
  std::vector<std::string> out;
  for (int r = 0; r < world; ++r) out.push_back(all.substr(displs[r], sizes[r]));
  return out;
}

}  // namespace nmt::dist
