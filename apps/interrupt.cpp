#include "apps/interrupt.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "actors/server/run_actor.hpp"
#include "apps/process_exit.hpp"

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

int exit_code_unless_runs_abandoned(int code) {
  if (actors::abandoned_executors() == 0)
    return code;
  spdlog::warn("{} run thread(s) missed their stop deadline and still execute; exiting without "
               "waiting for them", actors::abandoned_executors());
  exit_now(code);
}

} // namespace cdui::apps
