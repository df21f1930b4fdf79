#include "apps/ddp_settings.hpp"

#include <cstdlib>

namespace cdui::apps {

namespace {

/// `field` of `object` as a list of strings, or nullopt.
std::optional<std::vector<std::string>> strings(const nlohmann::json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end() || !it->is_array())
    return std::nullopt;
  std::vector<std::string> out;
  for (const auto& item : *it) {
    if (!item.is_string())
      return std::nullopt;
    out.push_back(item.get<std::string>());
  }
  return out;
}

/// `field` of `object` as an integer in [low, high], or nullopt.
std::optional<int> integer(const nlohmann::json& object, const char* field, int low, int high) {
  auto it = object.find(field);
  if (it == object.end() || !it->is_number_integer() || *it < low || *it > high)
    return std::nullopt;
  return it->get<int>();
}

} // namespace

std::optional<std::string> ddp_settings(const nlohmann::json& run, const std::filesystem::path& run_dir, int rank,
                                        int world, const ddp_environment& env, runtime::ddp_rank& out) {
  out.rank = rank;
  out.world_size = world;
  out.rendezvous = run_dir / "ddp.store";
  if (env.timeout_s != nullptr && std::atoi(env.timeout_s) > 0)
    out.timeout = std::chrono::seconds(std::atoi(env.timeout_s));
  auto visible = strings(run, "visible_devices");
  if (!visible)
    return "run.json's visible_devices is not a list of the run's cards";
  int first = 0;
  out.devices = *visible;
  if (auto it = run.find("ddp"); it != run.end()) {
    const auto& ddp = *it;
    auto store = ddp.is_object() ? ddp.find("store") : ddp.end();
    if (!ddp.is_object() || store == ddp.end() || !store->is_object() || !store->contains("host")
        || !(*store)["host"].is_string() || (*store)["host"].get<std::string>().empty())
      return "run.json's ddp.store.host is not the address of rank 0's rendezvous";
    auto port = integer(*store, "port", 0, 65535);
    if (!port)
      return "run.json's ddp.store.port is not a port (0 to 65535)";
    auto first_rank = integer(ddp, "first_rank", 0, world - 1);
    if (!first_rank)
      return "run.json's ddp.first_rank is not a rank below " + std::to_string(world);
    auto devices = strings(ddp, "devices");
    if (!devices || static_cast<int>(devices->size()) != world)
      return "run.json's ddp.devices is not a list of the " + std::to_string(world) + " ranks' cards";
    if (env.secret == nullptr || *env.secret == '\0')
      return "a rank across workers meets the others only with the run's secret, and CDUI_DDP_SECRET is not set";
    out.store_host = (*store)["host"].get<std::string>();
    out.store_port = *port;
    out.secret = env.secret;
    out.devices = *devices;
    first = *first_rank;
  } else if (static_cast<int>(visible->size()) < world) {
    return "the run has " + std::to_string(visible->size()) + " cards (run.json's visible_devices), not "
           + std::to_string(world);
  }
  auto local = rank - first;
  if (local < 0 || local >= static_cast<int>(visible->size()))
    return "rank " + std::to_string(rank) + " is not on this worker: its ranks are " + std::to_string(first) + " to "
           + std::to_string(first + static_cast<int>(visible->size()) - 1) + " (run.json's ddp.first_rank and visible_devices)";
  out.device = (*visible)[static_cast<std::size_t>(local)];
  return std::nullopt;
}

} // namespace cdui::apps
