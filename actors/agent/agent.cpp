#include "actors/agent/agent.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/agent/agent_actor.hpp"
#include "actors/common/curve_keys.hpp"
#include "actors/common/env_settings.hpp"
#include "actors/common/join_address.hpp"
#include "actors/policy/worker_table.hpp"
#include "devices/device.hpp"
#include "devices/host_inventory.hpp"
#include "messages/atoms.hpp"
#include "storage/credentials.hpp"
#include "storage/home.hpp"

namespace cdui {

namespace {

/// How often run() looks at the stop flag (set by stop(), from a signal handler).
constexpr auto stop_check_interval = std::chrono::milliseconds(50);
/// The agent's actors wait on files, processes and a socket thread, never on long work.
constexpr std::size_t agent_scheduler_threads = 2;

/// Whether `endpoint` is tcp://HOST:PORT with a port from 1 to 65535.
bool is_tcp_endpoint(const std::string& endpoint) {
  auto colon = endpoint.rfind(':');
  if (endpoint.rfind("tcp://", 0) != 0 || colon == std::string::npos || colon <= 6)
    return false;
  auto port = endpoint.substr(colon + 1);
  return !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos
         && std::stoi(port) >= 1 && std::stoi(port) <= 65535;
}

/// Whether the server is on this machine: the home's own (no endpoint), or a loopback endpoint.
bool on_loopback(const std::string& endpoint) {
  for (const char* host : {"tcp://127.", "tcp://localhost:", "tcp://[::1]:"})
    if (endpoint.rfind(host, 0) == 0)
      return true;
  return endpoint.empty();
}

} // namespace

std::string agent::default_name() {
  return actors::this_host_name();
}

agent::agent(config cfg) : cfg_(std::move(cfg)) {
  if (cfg_.home.empty())
    cfg_.home = storage::default_home();
  if (cfg_.name.empty())
    cfg_.name = actors::this_host_name();
  // Where its ranks' store listens when it hosts rank 0 of a run across workers: loopback with the
  // server on this machine, else its join address (the address it reaches the server from).
  if (cfg_.rendezvous_host.empty())
    cfg_.rendezvous_host = on_loopback(cfg_.server) ? "127.0.0.1" : actors::address_toward(cfg_.server);
  if (cfg_.rendezvous_host.empty())
    cfg_.rendezvous_host = actors::this_host_name();
  if (!policy::is_valid_worker_name(cfg_.name))
    throw std::invalid_argument("--name: '" + cfg_.name + "' is not a worker name ("
                                + policy::worker_name_rule + ")");
  auto inventory = cfg_.sim_devices.empty() ? devices::host_inventory::probe()
                                            : devices::host_inventory::probe(cfg_.sim_devices);
  environment_ = inventory.environment();
  for (const auto& wanted : cfg_.devices) {
    if (wanted == "cpu")
      continue;
    if (std::none_of(inventory.devices().begin(), inventory.devices().end(),
                     [&](const auto& d) { return d.name == wanted; })) {
      std::string offered;
      for (const auto& d : inventory.devices())
        offered += (offered.empty() ? "" : ", ") + d.name;
      throw std::invalid_argument("--devices: this machine has no " + wanted + " (it has "
                                  + offered + ")");
    }
  }
  if (!cfg_.server.empty() && !is_tcp_endpoint(cfg_.server))
    throw std::invalid_argument("--server: '" + cfg_.server + "' is not tcp://HOST:PORT");
  if (!cfg_.server_key.empty() && !actors::is_curve_key(cfg_.server_key))
    throw std::invalid_argument("--server-key: not a CURVE public key (40 Z85 characters, as the "
                                "enrollment command gives it)");
  if (!cfg_.credential_file.empty()) {
    cfg_.credential_file = std::filesystem::absolute(cfg_.credential_file);
    if (!storage::read_first_line(cfg_.credential_file))
      throw std::invalid_argument("--credential: cannot read a credential from "
                                  + cfg_.credential_file.string());
    auto perms = std::filesystem::status(cfg_.credential_file).permissions();
    using p = std::filesystem::perms;
    if ((perms & (p::group_all | p::others_all)) != p::none)
      spdlog::warn("agent '{}': {} can be read by other users; chmod 600 it", cfg_.name,
                   cfg_.credential_file.string());
  }
  offers_.push_back(actors::this_host_cpu_offer());  // the CPU is always offered
  for (const auto& d : inventory.devices()) {
    if (d.name == "cpu")
      continue;
    if (!cfg_.devices.empty()
        && std::find(cfg_.devices.begin(), cfg_.devices.end(), d.name) == cfg_.devices.end())
      continue;
    offers_.push_back({d.name, devices::kind_of(d.name), d.uuid, d.total_bytes, d.total_bytes, d.label});
  }
}

std::optional<std::string> agent::run() {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", agent_scheduler_threads);
  cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{cfg};
  std::optional<std::string> refused;
  {
    caf::scoped_actor self{system};
    actors::agent_setup setup;
    setup.name = cfg_.name;
    setup.home = cfg_.home;
    setup.offers = offers_;
    setup.environment = environment_;
    setup.one_shot = cfg_.one_shot;
    setup.ephemeral = cfg_.ephemeral;
    setup.rendezvous_host = cfg_.rendezvous_host;
    setup.stop_deadline_ms = actors::stop_deadline_setting();
    setup.server = cfg_.server;
    setup.server_key = cfg_.server_key;
    setup.credential_file = cfg_.credential_file;
    setup.on_joined = cfg_.on_joined;
    setup.owner = self;
    auto a = system.spawn(actors::agent_connection, std::move(setup));
    self->monitor(a);
    bool stop_sent = false;
    for (bool running = true; running;) {
      self->receive(
        [&](atoms::ended, const std::string& reason, bool was_refused) {
          if (was_refused)
            refused = reason;
        },
        [&](const caf::down_msg& down) {
          running = false;
          if (down.reason && down.reason != caf::exit_reason::normal)
            spdlog::error("agent '{}': its actor failed: {}", cfg_.name, system.render(down.reason));
        },
        caf::after(stop_check_interval) >> [&] {
          if (stop_ && !stop_sent) {
            stop_sent = true;
            self->send(a, atoms::stop::value);
          }
        });
    }
  }
  // The actor system waits here for the run supervisors to quit; the runs' processes go on.
  return refused;
}

} // namespace cdui
