#include "apps/process_exit.hpp"

#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "devices/sim_card_registry.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CDUI_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CDUI_SANITIZED 1
#endif
#endif

namespace cdui::apps {

void exit_now(int code) {
  devices::release_sim_cards();
  spdlog::shutdown();
  std::fflush(nullptr);
  std::_Exit(code);
}

void exit_after_command(int code) {
#ifdef CDUI_SANITIZED
  std::exit(code);
#else
  exit_now(code);
#endif
}

} // namespace cdui::apps
