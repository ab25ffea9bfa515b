#include "dist/mpi_gather.h"

#include "dist/dist_error.h"

namespace nmt::dist {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(len));
}

void check_posted(int rc, const char* call) {
  if (rc != MPI_SUCCESS) {
    mark_collectives_broken();
    throw DistError(std::string(call) + " failed: " + mpi_error_text(rc));
  }
}

void wait_request(MPI_Request& req, const std::string& op, Watchdog& watchdog) {
  watchdog.wait(op, [&] {
    int flag = 0;
    const int rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      mark_collectives_broken();
      throw DistError(op + " failed on rank " + std::to_string(watchdog.rank()) + " during " + watchdog.phase() +
                      ": " + mpi_error_text(rc));
    }
    return flag != 0;
  });
}

std::vector<std::string> gather_bytes(const std::string& mine, int world, MPI_Comm comm, Watchdog& watchdog) {
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(world), displs(world);
  MPI_Request req;
  watchdog.next_sequence();
  check_posted(MPI_Iallgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm, &req), "MPI_Iallgather");
  wait_request(req, "all_gather (sizes)", watchdog);
  int total = 0;
  for (int r = 0; r < world; ++r) {
    displs[r] = total;
    total += sizes[r];
  }
  std::string all(total, '\0');
  watchdog.next_sequence();
  check_posted(MPI_Iallgatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), displs.data(), MPI_CHAR, comm, &req),
               "MPI_Iallgatherv");
  wait_request(req, "all_gather (" + std::to_string(total) + " bytes)", watchdog);
  std::vector<std::string> out;
  for (int r = 0; r < world; ++r) out.push_back(all.substr(displs[r], sizes[r]));
  return out;
}

}  // namespace nmt::dist
