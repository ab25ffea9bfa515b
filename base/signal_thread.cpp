#include "base/signal_thread.h"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <thread>

namespace nmt::base {

void handle_signals_on_own_thread(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : signals) sigaddset(&set, signal);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    for (;;) pause();  // returns after each handler; a default action ends the process
  }).detach();
}

}  // namespace nmt::base
