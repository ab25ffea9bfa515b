#include "base/stop_signal.h"

#include <atomic>

namespace nmt::base {
namespace {
// Set by the handler on the signal thread (signal_thread.h), read by the training loop.
std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free);
void on_signal(int sig) { g_received = sig; }
}  // namespace

StopSignal::StopSignal() {
  g_received = 0;
  handlers_.install(on_signal, {SIGUSR1, SIGTERM});
  // Ctrl-C stops as gracefully (no checkpoint write cut in half, no temporary left); a
  // second Ctrl-C finds the default action back and ends the process at once.
  handlers_.install(on_signal, {SIGINT}, SA_RESETHAND);
}

StopSignal::~StopSignal() = default;  // handlers_ puts the previous actions back

int StopSignal::received() const { return g_received; }

}  // namespace nmt::base
