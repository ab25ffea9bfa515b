#pragma once
// The collective watchdog (dist.timeout_s): MPI collectives have no timeout of their own,
// so a hung peer or a cut link would hang every other rank forever. Every wait on a
// collective goes through wait(), which polls the request against a deadline. Past it,
// the ranks that are still alive tell each other where they are (point-to-point on a
// private communicator, for a short grace window), and wait() throws CollectiveTimeout
// naming the collective, the phase (update), this rank and host, and the ranks that did
// not arrive. From then on the process's MPI state is unusable: destructors must not
// wait on it (broken()), and the job ends through ProcessGroup::abort.
#include <mpi.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/dist_error.h"

namespace nmt::dist {

// A collective that did not complete within dist.timeout_s. A fault: exit kFaultExit.
class CollectiveTimeout : public DistError {
 public:
  using DistError::DistError;
};

class Watchdog {
 public:
  // Collective over `world` (at startup): learns every rank's host name.
  Watchdog(double timeout_s, MPI_Comm world);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // What the job is doing, for the message ("update 37", "checkpoint at update 36").
  void set_phase(std::string phase) { phase_ = std::move(phase); }
  const std::string& phase() const { return phase_; }
  double timeout_s() const { return timeout_s_; }
  int rank() const { return rank_; }
  const std::string& host(int rank) const { return hosts_[rank]; }

  // Polls `done` (which drives MPI progress, e.g. MPI_Test) until it returns true.
  // `op` names the collective ("all_reduce float32 x 1048576"). Throws CollectiveTimeout
  // past the deadline, DistError if `done` throws.
  void wait(const std::string& op, const std::function<bool()>& done);

  // Starts a numbered collective; the number is part of every message about it, and the
  // arrival exchange compares it across ranks.
  int64_t next_sequence() { return ++sequence_; }

  // The message of a collective that another thread followed and found stalled (the NCCL
  // backend's monitor): the same exchange with the peers as wait()'s timeout, so the
  // message names the ranks that did not arrive. Collective #seq ran during `phase`. Called
  // off the thread that initialised MPI, it needs MPI_THREAD_MULTIPLE (ProcessGroup asks for it).
  std::string stall_report(const std::string& op, int64_t seq, const std::string& phase, double waited_s);

 private:
  // After a timeout: which peers are also waiting (and in which collective), heard within
  // the grace window. Returns the message.
  std::string arrival_report(const std::string& op, double waited_s) {
    return stall_report(op, sequence_, phase_, waited_s);
  }

  double timeout_s_;
  MPI_Comm notice_comm_ = MPI_COMM_NULL;  // private: notices never match other traffic
  int rank_ = 0, world_ = 1;
  std::vector<std::string> hosts_;
  std::string phase_ = "startup";
  int64_t sequence_ = 0;
};

// True once a collective timed out or failed in this process: MPI requests and
// communicators may then never complete, so destructors leak them instead of waiting.
bool collectives_broken();
void mark_collectives_broken();

// After a failure, requests left in flight may still write into their buffers: such
// buffers are handed here and never freed (the process is about to end anyway).
void keep_forever(std::shared_ptr<void> buffer);

}  // namespace nmt::dist
