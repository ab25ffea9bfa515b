// The collective watchdog (dist.timeout_s). Alone (ctest) it checks the message and the
// deadline at world size 1; under `mpirun -np 2` (tests/CMakeLists.txt) rank 1 arrives
// late, so rank 0 must name it as the rank that did not arrive, and rank 1, arriving
// after rank 0 gave up, hears that rank 0 waits in the same collective.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "dist/watchdog.h"
#include "tests/test_env.h"

namespace nmt::dist {
namespace {

std::string host_name() {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// Waits on a collective that never completes; returns the message and the seconds waited.
std::pair<std::string, double> time_out(Watchdog& w) {
  w.next_sequence();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    w.wait("all_reduce float32 x 4", [] { return false; });
  } catch (const CollectiveTimeout& e) {
    return {e.what(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  }
  ADD_FAILURE() << "no timeout";
  return {"", 0};
}

TEST(Watchdog, ACollectiveThatNeverCompletesTimesOutNamingWhatWhereAndWhen) {
  const auto& group = nmt::testing::process_group();
  Watchdog w(0.5, MPI_COMM_WORLD);
  w.set_phase("update 7");
  const int r = group.rank();
  if (group.world_size() == 2 && r == 1)  // arrive after rank 0's deadline and grace window
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  const auto [msg, waited] = time_out(w);
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 0.5 + 2.0 + 2.0 + 2.0);  // deadline + grace + the second speaker's pause + slack
  EXPECT_NE(msg.find("collective all_reduce float32 x 4 #1 during update 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dist.timeout_s = 0.5 s"), std::string::npos) << msg;
  EXPECT_NE(msg.find("on rank " + std::to_string(r) + " (host " + host_name() + ", pid " + std::to_string(getpid())),
            std::string::npos)
      << msg;
  if (group.world_size() == 1) {
    EXPECT_NE(msg.find("every rank arrived"), std::string::npos) << msg;
  } else if (group.world_size() == 2) {
    if (r == 0)
      EXPECT_NE(msg.find("ranks that did not arrive (no word within 2 s: dead, hung or unreachable): 1 (" + host_name()),
                std::string::npos)
          << msg;
    else
      EXPECT_NE(msg.find("ranks waiting in it too: 0 (" + host_name() + ")"), std::string::npos) << msg;
  }
  EXPECT_TRUE(collectives_broken());
}

}  // namespace
}  // namespace nmt::dist
