#include "base/stop_signal.h"

namespace nmt::trainer {
namespace {
volatile std::sig_atomic_t g_received = 0;
void on_signal(int sig) { g_received = sig; }
}  // namespace

StopSignal::StopSignal() {
  g_received = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, &old_usr1_);
  sigaction(SIGTERM, &sa, &old_term_);
  // Ctrl-C stops as gracefully (no checkpoint write cut in half, no temporary left); a
  // second Ctrl-C finds the default action back and ends the process at once.
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  sigaction(SIGINT, &sa, &old_int_);
}

StopSignal::~StopSignal() {
  sigaction(SIGUSR1, &old_usr1_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGINT, &old_int_, nullptr);
}

int StopSignal::received() const { return g_received; }

}  // namespace nmt::trainer
