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

void throw_request_error(int rc, const std::string& op, const Watchdog& watchdog) {
  mark_collectives_broken();
  throw DistError(op + " failed on rank " + std::to_string(watchdog.rank()) + " during " + watchdog.phase() + ": " +
                  mpi_error_text(rc));
}

void wait_request(MPI_Request& req, const std::string& op, Watchdog& watchdog) {
  watchdog.wait(op, [&] {
    int flag = 0;
    if (const int rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) throw_request_error(rc, op, watchdog);
    return flag != 0;
  });
}

std::vector<std::string> gather_bytes(const std::string& mine_in, int world, MPI_Comm comm, Watchdog& watchdog) {
  // Buffers on the heap: if a wait fails, MPI may still write into them, so they are then
  // handed to keep_forever instead of being freed.
  auto mine_p = std::make_shared<std::string>(mine_in);
  auto n_p = std::make_shared<int>(static_cast<int>(mine_in.size()));
  auto sizes_p = std::make_shared<std::vector<int>>(world);
  auto all_p = std::make_shared<std::string>();
  const std::string& mine = *mine_p;
  int& n = *n_p;
  std::vector<int>& sizes = *sizes_p;
  std::vector<int> displs(world);
  auto wait_or_keep = [&](MPI_Request& r, const std::string& op) {
    try {
      wait_request(r, op, watchdog);
    } catch (...) {
      keep_forever(mine_p), keep_forever(n_p), keep_forever(sizes_p), keep_forever(all_p);
      throw;
    }
  };
  MPI_Request req;
  watchdog.next_sequence();
  check_posted(MPI_Iallgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm, &req), "MPI_Iallgather");
  wait_or_keep(req, "all_gather (sizes)");
  int total = 0;
  for (int r = 0; r < world; ++r) {
    displs[r] = total;
    total += sizes[r];
  }
  std::string& all = *all_p;
  all.assign(static_cast<size_t>(total), '\0');
  watchdog.next_sequence();
  check_posted(MPI_Iallgatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), displs.data(), MPI_CHAR, comm, &req),
               "MPI_Iallgatherv");
  wait_or_keep(req, "all_gather (" + std::to_string(total) + " bytes)");
  std::vector<std::string> out;
  for (int r = 0; r < world; ++r) out.push_back(all.substr(displs[r], sizes[r]));
  return out;
}

}  // namespace nmt::dist
