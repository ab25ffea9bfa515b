#include "base/stop_signal.h"

namespace nmt::base {
namespace {
volatile std::sig_atomic_t g_received = 0;
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
