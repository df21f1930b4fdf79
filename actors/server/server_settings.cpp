#include "actors/server/server_settings.hpp"

#include <sys/sysinfo.h>

#include <cstdlib>
#include <thread>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/policy/slot_limits.hpp"
#include "devices/card_memory.hpp"
#include "devices/host_inventory.hpp"

namespace cdui::setup {

caf::actor_system_config make_config(const server::config& c) {
  caf::actor_system_config cfg;
  auto n = c.scheduler_threads > 0 ? c.scheduler_threads
                                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cfg.set("scheduler.max-threads", static_cast<std::size_t>(n));
  cfg.set("logger.verbosity", caf::atom("quiet"));
  // CAF's default: after its busy polls, a worker with an empty queue polls again every 50 µs for
  // 500 rounds before it waits on its condition variable.
  if (c.idle_workers_wait)
    cfg.set("work-stealing.moderate-poll-attempts", std::size_t{0});
  return cfg;
}

namespace {

int interactive_limit() {
  const char* text = std::getenv(actors::interactive_limit_env);
  if (text == nullptr || *text == '\0')
    return actors::default_interactive_limit;
  try {
    std::size_t used = 0;
    int n = std::stoi(text, &used);
    if (used == std::string{text}.size() && n >= 1)
      return n;
  } catch (const std::exception&) {
  }
  spdlog::warn("{}: '{}' is not an integer of at least 1; using {}",
               actors::interactive_limit_env, text, actors::default_interactive_limit);
  return actors::default_interactive_limit;
}

} // namespace

storage::store_budget budget_from_env(const storage::store_budget& defaults) {
  auto reading = storage::read_budget(defaults);
  if (!reading.warning.empty())
    spdlog::warn("{}", reading.warning);
  return reading.budget;
}

namespace {

/// A memory allowance from the environment, a whole number of MiB from 0 to 1048576 (1 TiB), in
/// bytes; else `fallback` MiB, with a warning in the log.
std::int64_t mib_setting(const char* var, std::int64_t fallback) {
  auto mib = number_setting(var, static_cast<double>(fallback), 0, 1 << 20, "MiB", true);
  return static_cast<std::int64_t>(mib) << 20;
}

/// One of this server's cards shared by memory, as the memory ledger counts it: the CPU's RAM and
/// what is available of it; a card's size and what it has free, counting every process on it (a
/// sim card's shared count: runs here, agents, cdui sim-hold; a CUDA card's driver figure).
std::optional<std::pair<std::int64_t, std::int64_t>>
measure_local_card(const std::vector<devices::offered_device>& offers, const std::string& key) {
  if (key == "cpu") {
    struct sysinfo info {};
    if (::sysinfo(&info) != 0)
      return std::nullopt;
    auto unit = static_cast<std::int64_t>(info.mem_unit);
    return std::pair{static_cast<std::int64_t>(info.totalram) * unit,
                     static_cast<std::int64_t>(info.freeram + info.bufferram) * unit};
  }
  for (const auto& d : offers)
    if (d.name == key && d.total_bytes > 0)
      return std::pair{d.total_bytes, devices::card_free_bytes(devices::kind_of(d.name), d.uuid, d.total_bytes)};
  return std::nullopt;
}

} // namespace

actors::run_queue_config make_queue_config(const server::config& c,
                                           const std::filesystem::path& home,
                                           std::shared_ptr<storage::run_store> store) {
  actors::run_queue_config q;
  q.home = home;
  q.host = c.sim_devices.empty() ? devices::host_inventory::probe()
                                 : devices::host_inventory::probe(c.sim_devices);
  q.store = std::move(store);
  if (const char* text = std::getenv(policy::slot_limits_env)) {
    auto parsed = policy::parse_slot_limits(text, q.host.counts().current_cuda);
    for (const auto& warning : parsed.warnings)
      spdlog::warn("{}", warning);
    q.limits = std::move(parsed.limits);
  }
  q.interactive_limit = interactive_limit();
  q.resume = c.resume;
  q.exec_binary = c.run_process_binary;
  q.stop_deadline_ms = actors::stop_deadline_setting();
  q.cuda_context_bytes = mib_setting("CODEFYUI_EXECUTION_CUDA_CONTEXT_MIB", 768);
  q.sim_context_bytes = mib_setting("CODEFYUI_SIM_CONTEXT_MIB", 0);
  q.probe = [offers = q.host.devices()](const std::string& key)
    -> std::optional<std::pair<std::int64_t, std::int64_t>> {
    return measure_local_card(offers, key);
  };
  return q;
}

} // namespace cdui::setup
