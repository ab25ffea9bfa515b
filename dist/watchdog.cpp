#include "dist/watchdog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "dist/process_group.h"

namespace nmt::dist {
namespace {

std::atomic<bool> g_broken{false};  // MPI's state is per process, so is its brokenness

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// How long the survivors listen for each other after a timeout: long enough to cover the
// skew between ranks entering the same collective, short against the timeout itself.
double grace_s(double timeout_s) { return std::clamp(0.1 * timeout_s, 2.0, 30.0); }

constexpr int kNoticeTag = 7001;

// What the survivors of a timeout learn from each other.
struct Arrivals {
  std::vector<bool> heard;    // per rank: its notice came within the grace window (self: true)
  std::vector<int64_t> got;   // per rank: (sequence, rank) of its notice; -1 where none came
};

// Sends this rank's notice (the collective it is stuck in) to every peer and listens for
// theirs for the whole grace window: a peer that timed out a little later still counts.
Arrivals exchange_notices(MPI_Comm comm, int rank, int world, int64_t seq, double grace) {
  // The notices may complete after we stop listening: their buffers live forever.
  auto mine = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{seq, rank});
  auto got = std::make_shared<std::vector<int64_t>>(2 * static_cast<size_t>(world), -1);
  auto recvs = std::make_shared<std::vector<MPI_Request>>(static_cast<size_t>(world), MPI_REQUEST_NULL);
  keep_forever(mine);
  keep_forever(got);
  keep_forever(recvs);
  for (int p = 0; p < world; ++p) {
    if (p == rank) continue;
    MPI_Request s;
    MPI_Isend(mine->data(), 2, MPI_INT64_T, p, kNoticeTag, comm, &s);
    MPI_Irecv(got->data() + 2 * p, 2, MPI_INT64_T, p, kNoticeTag, comm, &(*recvs)[static_cast<size_t>(p)]);
  }
  const auto start = Clock::now();
  std::vector<bool> heard(static_cast<size_t>(world), false);
  heard[static_cast<size_t>(rank)] = true;
  while (since(start) < grace) {
    bool all = true;
    for (int p = 0; p < world; ++p) {
      if (heard[static_cast<size_t>(p)]) continue;
      int flag = 0;
      if (MPI_Test(&(*recvs)[static_cast<size_t>(p)], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag)
        heard[static_cast<size_t>(p)] = true;
      else all = false;
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return {heard, *got};  // a copy: the buffers MPI may still write stay untouched
}

// The peers, sorted by what they were doing: silent, in another collective, in this one.
std::string describe_peers(const Arrivals& a, int rank, int64_t seq, const std::vector<std::string>& hosts,
                           double grace) {
  std::vector<std::string> waiting, elsewhere, silent;
  for (int p = 0; p < static_cast<int>(a.heard.size()); ++p) {
    if (p == rank) continue;
    const std::string who = fmt::format("{} ({})", p, hosts[static_cast<size_t>(p)]);
    if (!a.heard[static_cast<size_t>(p)]) silent.push_back(who);
    else if (a.got[2 * p] == seq) waiting.push_back(who);
    else elsewhere.push_back(fmt::format("{} in collective #{}", who, a.got[2 * p]));
  }
  std::string msg;
  if (!silent.empty())
    msg += fmt::format("; ranks that did not arrive (no word within {:g} s: dead, hung or unreachable): {}", grace,
                       fmt::join(silent, ", "));
  if (!elsewhere.empty()) msg += fmt::format("; ranks stuck in a different collective: {}", fmt::join(elsewhere, ", "));
  if (!waiting.empty()) msg += fmt::format("; ranks waiting in it too: {}", fmt::join(waiting, ", "));
  if (silent.empty() && elsewhere.empty())
    msg += "; every rank arrived, so the transport itself stalled (a slow or broken link?)";
  return msg;
}

// The lowest-ranked survivor that heard the others: it speaks first.
int first_speaker(const Arrivals& a, int rank) {
  for (int p = 0; p < static_cast<int>(a.heard.size()); ++p)
    if (a.heard[static_cast<size_t>(p)] && (p == rank || a.got[2 * p] >= 0)) return p;
  return rank;
}

}  // namespace

bool collectives_broken() { return g_broken.load(); }

void keep_forever(std::shared_ptr<void> buffer) {
  static auto* graveyard = new std::vector<std::shared_ptr<void>>();  // never destroyed
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  graveyard->push_back(std::move(buffer));
}
void mark_collectives_broken() { g_broken.store(true); }

Watchdog::Watchdog(double timeout_s, MPI_Comm world) : timeout_s_(timeout_s) {
  MPI_Comm_rank(world, &rank_);
  MPI_Comm_size(world, &world_);
  MPI_Comm_dup(world, &notice_comm_);
  MPI_Comm_set_errhandler(notice_comm_, MPI_ERRORS_RETURN);
  // Host names, fixed width, in rank order: the messages name where each rank runs.
  char mine[64] = {0};
  const std::string host = host_name();
  std::copy_n(host.begin(), std::min<size_t>(host.size(), sizeof(mine) - 1), mine);
  std::vector<char> all(sizeof(mine) * static_cast<size_t>(world_));
  MPI_Allgather(mine, sizeof(mine), MPI_CHAR, all.data(), sizeof(mine), MPI_CHAR, world);
  for (int r = 0; r < world_; ++r) hosts_.emplace_back(all.data() + sizeof(mine) * static_cast<size_t>(r));
}

Watchdog::~Watchdog() {
  if (!collectives_broken() && notice_comm_ != MPI_COMM_NULL) MPI_Comm_free(&notice_comm_);
}

void Watchdog::wait(const std::string& op, const std::function<bool()>& done) {
  if (done()) return;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  // Spin first (the reduction usually finishes within microseconds of the last peer's
  // arrival), then yield the core (ranks may share cores), then nap once the wait is long.
  for (int64_t polls = 1;; ++polls) {
    if (done()) return;
    if (polls < 1000) continue;
    const auto now = Clock::now();
    if (now > deadline) break;
    if (now - start < std::chrono::seconds(1)) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  mark_collectives_broken();
  const double waited = since(start);
  std::string message = arrival_report(op, waited);
  throw CollectiveTimeout(message);
}

std::string Watchdog::stall_report(const std::string& op, int64_t seq, const std::string& phase, double waited_s) {
  const double grace = grace_s(timeout_s_);
  const Arrivals arrivals = exchange_notices(notice_comm_, rank_, world_, seq, grace);
  std::string msg = fmt::format(
      "collective {} #{} during {} did not complete within dist.timeout_s = {:g} s (waited {:.1f} s) on rank {} "
      "(host {}, pid {})",
      op, seq, phase, timeout_s_, waited_s, rank_, hosts_[static_cast<size_t>(rank_)], getpid());
  msg += describe_peers(arrivals, rank_, seq, hosts_, grace);
  // Leave the notices in flight: MPI may never complete them now. One survivor speaks
  // first (the lowest-ranked that heard the others); the rest give it time to end the
  // job so that one message, not one per rank, is what the user reads first.
  if (first_speaker(arrivals, rank_) != rank_) std::this_thread::sleep_for(std::chrono::seconds(2));
  return msg;
}

}  // namespace nmt::dist
