#include "base/signal_deferral.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <exception>

namespace nmt::base {
namespace {

// Written by the handler, read by the thread that holds the deferral (under
// handle_signals_on_own_thread, another thread): a lock-free atomic, safe in a handler.
std::atomic<int> g_pending{0};
static_assert(std::atomic<int>::is_always_lock_free);

void record(int sig) { g_pending = sig; }

}  // namespace

Interrupted::Interrupted(int signal, const std::string& what) : std::runtime_error(what), signal_(signal) {}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(signal);
  }
}

SignalDeferral::SignalDeferral() : outer_pending_(g_pending), unwinding_at_start_(std::uncaught_exceptions()) {
  g_pending = 0;
  handlers_.install(record, {SIGTERM, SIGHUP});
  // The first Ctrl-C is deferred; a second one must still end a stuck process.
  handlers_.install(record, {SIGINT}, SA_RESETHAND);
}

SignalDeferral::~SignalDeferral() {
  handlers_.restore();  // before the raise below, which must meet the previous handlers
  const int sig = g_pending;
  g_pending = outer_pending_;
  // While an exception unwinds (Interrupted, or any error) the caller reports it; raising
  // the signal now would end the process before its message. To the process, not this
  // thread: under handle_signals_on_own_thread this thread blocks it.
  if (sig != 0 && std::uncaught_exceptions() == unwinding_at_start_) ::kill(::getpid(), sig);
}

int SignalDeferral::pending() const { return g_pending; }

void SignalDeferral::throw_if_pending(const std::string& doing) const {
  if (const int sig = g_pending; sig != 0) throw Interrupted(sig, doing + ": interrupted by " + signal_name(sig));
}

}  // namespace nmt::base
