#include "base/signal_handlers.h"

namespace nmt::base {

void SignalHandlers::install(void (*handler)(int), std::initializer_list<int> signals, int extra_flags) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | extra_flags;
  for (int signal : signals) {
    struct sigaction old {};
    sigaction(signal, &sa, &old);
    replaced_.emplace_back(signal, old);
  }
}

void SignalHandlers::restore() {
  for (const auto& [signal, old] : replaced_) sigaction(signal, &old, nullptr);
  replaced_.clear();
}

}  // namespace nmt::base
