// base::SignalDeferral: a signal that arrives while a temporary exists is held back and
// then delivered to whatever handled it before.
#include <gtest/gtest.h>

#include <csignal>

#include "base/signal_deferral.h"

namespace {

volatile std::sig_atomic_t g_seen = 0;
void remember(int sig) { g_seen = sig; }

// Installs `remember` for SIGTERM and SIGINT for the test's life, as the trainer's stop flag does.
struct OwnHandlers {
  struct sigaction old_term {}, old_int {};
  OwnHandlers() {
    g_seen = 0;
    struct sigaction sa {};
    sa.sa_handler = remember;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);
  }
  ~OwnHandlers() {
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGINT, &old_int, nullptr);
  }
};

}  // namespace

TEST(SignalDeferral, HoldsASignalBackThenDeliversItToThePreviousHandler) {
  OwnHandlers own;
  {
    nmt::base::SignalDeferral guard;
    EXPECT_EQ(guard.pending(), 0);
    std::raise(SIGTERM);
    EXPECT_EQ(guard.pending(), SIGTERM);
    EXPECT_EQ(g_seen, 0) << "the previous handler ran while the guard held the signal";
  }
  EXPECT_EQ(g_seen, SIGTERM) << "the held signal was not delivered when the guard ended";
}

TEST(SignalDeferral, ThrowIfPendingNamesTheWorkAndTheSignal) {
  OwnHandlers own;
  try {
    nmt::base::SignalDeferral guard;
    guard.throw_if_pending("preprocess train");  // nothing yet: no throw
    std::raise(SIGINT);
    guard.throw_if_pending("preprocess train");
    FAIL() << "no Interrupted thrown";
  } catch (const nmt::base::Interrupted& e) {
    EXPECT_EQ(e.signal(), SIGINT);
    EXPECT_STREQ(e.what(), "preprocess train: interrupted by SIGINT");
  }
  // The exception carries the signal to main's exit code; it is not raised again on the way out.
  EXPECT_EQ(g_seen, 0);
}

TEST(SignalDeferral, WithoutASignalTheHandlersAreRestoredUntouched) {
  OwnHandlers own;
  { nmt::base::SignalDeferral guard; }
  std::raise(SIGINT);
  EXPECT_EQ(g_seen, SIGINT);
}
