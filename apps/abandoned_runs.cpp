#include "apps/abandoned_runs.hpp"

#include <spdlog/spdlog.h>

#include "actors/server/run_actor.hpp"
#include "apps/process_exit.hpp"

namespace cdui::apps {

int exit_code_unless_runs_abandoned(int code) {
  if (actors::abandoned_executors() == 0)
    return code;
  spdlog::warn("{} run thread(s) missed their stop deadline and still execute; exiting without "
               "waiting for them", actors::abandoned_executors());
  exit_now(code);
}

} // namespace cdui::apps
