#include "apps/interrupt.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace cdui::apps {

namespace {

volatile std::sig_atomic_t got_signal = 0;

extern "C" void on_interrupt(int sig) {
  if (got_signal) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  got_signal = 1;
}

} // namespace

void catch_interrupts() {
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
}

bool interrupted() {
  return got_signal != 0;
}

} // namespace cdui::apps
