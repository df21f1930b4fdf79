#include "apps/sim_hold_command.hpp"

#include <csignal>
#include <cstdio>

#include "apps/run_command.hpp"
#include "devices/memory.hpp"
#include "devices/sim_card_memory.hpp"
#include "devices/sim_devices.hpp"

namespace cdui::apps {

int sim_hold_command(const std::string& uuid, const std::string& size) {
  auto bytes = devices::parse_bytes(size);
  if (auto* err = std::get_if<std::string>(&bytes)) {
    std::fprintf(stderr, "cdui sim-hold: %s\n", err->c_str());
    return exit_usage;
  }
  auto n = std::get<std::int64_t>(bytes);
  // Block the stop signals before charging, so that none ends the process between the charge and
  // the wait (the bytes are given back on every stop but SIGKILL).
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &stops, nullptr);
  auto opened = devices::sim_card_memory::open(uuid, 0);
  if (auto* err = std::get_if<std::string>(&opened)) {
    std::fprintf(stderr, "cdui sim-hold: %s\n", err->c_str());
    return exit_usage;
  }
  auto card = std::get<std::shared_ptr<devices::sim_card_memory>>(opened);
  if (!card->charge(n)) {
    std::fprintf(stderr, "cdui sim-hold: %s has %s free of its %s; cannot hold %s\n", uuid.c_str(),
                 devices::format_bytes(card->free_bytes()).c_str(),
                 devices::format_bytes(card->total()).c_str(), devices::format_bytes(n).c_str());
    return exit_run_failed;
  }
  std::printf("holding %s on %s\n", devices::format_bytes(n).c_str(), uuid.c_str());
  std::fflush(stdout);
  int sig = 0;
  ::sigwait(&stops, &sig);
  card->credit(n);
  card->remove_if_last();  // the card's segment goes with its last holder
  return exit_ok;
}

} // namespace cdui::apps
