#pragma once
// Installing one handler for a few signals, and putting back the actions it replaced: what
// both of base/'s signal guards (SignalDeferral, StopSignal) do for their lifetime.
#include <csignal>
#include <initializer_list>
#include <utility>
#include <vector>

namespace nmt::base {

class SignalHandlers {
 public:
  SignalHandlers() = default;
  ~SignalHandlers() { restore(); }
  SignalHandlers(const SignalHandlers&) = delete;
  SignalHandlers& operator=(const SignalHandlers&) = delete;

  // Installs `handler` for each of `signals`, with SA_RESTART (a read or write the signal
  // interrupts is resumed, not failed with EINTR) plus `extra_flags`, keeping the actions
  // it replaces.
  void install(void (*handler)(int), std::initializer_list<int> signals, int extra_flags = 0);
  // Puts every replaced action back; a second call does nothing.
  void restore();

 private:
  std::vector<std::pair<int, struct sigaction>> replaced_;
};

}  // namespace nmt::base
