// base::handle_signals_on_own_thread: a process-directed signal runs its handler on the
// idle signal thread, never on the thread that called it nor on a busy thread started after
// it; a SignalDeferral held on a blocked thread still delivers to the previous handler. Each
// case runs in a child process (a death test), since the signal mask stays for a process's life.
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include "base/signal_deferral.h"
#include "base/signal_thread.h"

namespace {

std::atomic<int> g_signal{0};
std::atomic<pthread_t> g_handler_thread{};
void remember(int sig) {
  g_handler_thread = pthread_self();
  g_signal = sig;
}

void install_remember(int sig) {
  struct sigaction sa {};
  sa.sa_handler = remember;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

bool wait_for_signal(int sig) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (g_signal != sig && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  return g_signal == sig;
}

// Exit codes: 0 when the handler ran on neither the main nor the busy thread.
[[noreturn]] void handler_runs_on_the_signal_thread() {
  install_remember(SIGUSR2);
  nmt::base::handle_signals_on_own_thread({SIGUSR2});
  std::atomic<bool> stop{false};
  std::atomic<pthread_t> busy_id{};
  std::thread busy([&] {  // started after: inherits the blocking mask; never sleeps
    busy_id = pthread_self();
    while (!stop) {
    }
  });
  while (busy_id.load() == pthread_t{}) std::this_thread::yield();
  kill(getpid(), SIGUSR2);
  const bool seen = wait_for_signal(SIGUSR2);
  stop = true;
  busy.join();
  if (!seen) _exit(3);
  if (pthread_equal(g_handler_thread.load(), pthread_self())) _exit(4);
  if (pthread_equal(g_handler_thread.load(), busy_id.load())) _exit(5);
  _exit(0);
}

[[noreturn]] void deferral_still_delivers() {
  install_remember(SIGTERM);
  nmt::base::handle_signals_on_own_thread({SIGTERM});
  {
    nmt::base::SignalDeferral guard;
    kill(getpid(), SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (guard.pending() != SIGTERM && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    if (guard.pending() != SIGTERM) _exit(3);  // the deferral's own handler never saw it
    if (g_signal != 0) _exit(4);               // the previous handler ran while it was held
  }
  _exit(wait_for_signal(SIGTERM) ? 0 : 5);     // delivered once the guard ended
}

}  // namespace

TEST(SignalThread, HandlerRunsOnTheSignalThreadNotOnABusyOne) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(handler_runs_on_the_signal_thread(), testing::ExitedWithCode(0), "");
}

TEST(SignalThread, DeferralOnABlockedThreadStillDeliversToThePreviousHandler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(deferral_still_delivers(), testing::ExitedWithCode(0), "");
}
