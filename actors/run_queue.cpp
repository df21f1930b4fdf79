#include "actors/run_queue.hpp"

#include <chrono>
#include <random>

#include <caf/all.hpp>

#include "actors/device_slot.hpp"
#include "actors/run_actor.hpp"
#include "messages/atoms.hpp"
#include "messages/run_outcome.hpp"
#include "runtime/validate.hpp"

namespace cdui::actors {

namespace {

using self_ptr = caf::stateful_actor<run_queue_state>*;

std::string new_run_id(const std::filesystem::path& home) {
  static std::mt19937_64 gen{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  for (;;) {
    std::string id;
    auto bits = gen();
    for (int i = 0; i < 8; ++i, bits >>= 4)
      id += hex[bits & 0xf];
    if (!std::filesystem::exists(home / "runs" / id))
      return id;
  }
}

/// The device a run queues for: its option, else the first device a node of the graph names, else
/// the CPU. Returns the canonical key, or the refusal's sentence.
std::variant<devices::resolved_device, std::string>
queue_device(const run_request& req, const runtime::validated_graph& g,
             const devices::host_inventory& host) {
  std::string text = req.device;
  std::string field = "option 'device'";
  if (text.empty()) {
    for (const auto& node : g.g.nodes) {
      if (node.was_given("device")) {
        text = node.params["device"].get<std::string>();
        field = "node '" + node.id + "' (" + node.type + "), param 'device'";
        break;
      }
    }
  }
  if (text.empty())
    return devices::resolved_device{"cpu", std::nullopt};
  auto parsed = devices::parse_device(text);
  if (auto* err = std::get_if<devices::device_parse_error>(&parsed))
    return field + ": " + err->message;
  return devices::resolve_device(std::get<devices::device_spec>(parsed), host.counts());
}

caf::actor slot_for(self_ptr self, const std::string& key) {
  auto& slots = self->state.slots;
  if (auto i = slots.find(key); i != slots.end())
    return i->second;
  int limit = devices::accelerator_slot_limit;
  for (const auto& d : self->state.host.devices())
    if (d.name == key)
      limit = d.slot_limit;
  auto slot = self->spawn(device_slot, key, limit);
  slots.emplace(key, slot);
  return slot;
}

submit_result submit(self_ptr self, run_request& req) {
  auto checked = runtime::validate_graph(std::string_view{req.graph_json});
  if (auto* errors = std::get_if<std::vector<runtime::graph_error>>(&checked))
    return {"", runtime::to_string(*errors)};
  auto graph = std::make_shared<runtime::validated_graph>(
    std::move(std::get<runtime::validated_graph>(checked)));
  auto device = queue_device(req, *graph, self->state.host);
  if (auto* refusal = std::get_if<std::string>(&device))
    return {"", *refusal};
  auto resolved = std::get<devices::resolved_device>(device);

  run_setup setup;
  setup.info.id = new_run_id(self->state.home);
  setup.info.name = req.name;
  setup.info.queue_key = resolved.name;
  setup.info.created_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  try {
    setup.dir = std::make_shared<storage::run_directory>(self->state.home, setup.info.id,
                                                         req.graph_json);
  } catch (const std::exception& e) {
    return {"", std::string{"cannot create the run's folder: "} + e.what()};
  }
  setup.graph = graph;
  auto& ctx = setup.context;
  ctx.run_id = setup.info.id;
  ctx.run_dir = setup.dir->path();
  ctx.device = req.device.empty() ? "" : resolved.name;
  ctx.seed = req.has_seed ? req.seed : std::random_device{}();
  ctx.num_threads = self->state.host.cores_per_run(resolved.name);
  ctx.host = self->state.host.counts();

  auto id = setup.info.id;
  auto slot = slot_for(self, resolved.name);
  // A node's device falls back with its own warning when it runs; warn here only for the option.
  auto warning = req.device.empty() ? std::nullopt : resolved.fallback_warning;
  auto run = self->spawn(run_actor, std::move(setup), slot);
  if (warning) {
    nlohmann::json data{{"kind", "device_fallback"}, {"message", *warning}};
    self->send(run, atoms::append::value, std::string{"run_warning"}, data.dump());
  }
  self->state.runs.emplace(id, run);
  self->state.order.push_back(id);
  self->send(slot, atoms::enqueue::value, id, run);
  return {id, ""};
}

caf::error unknown_run(const std::string& id) {
  return caf::make_error(caf::sec::invalid_argument, "no run has the id '" + id + "'");
}

} // namespace

caf::behavior run_queue(self_ptr self, std::filesystem::path home, devices::host_inventory host) {
  self->state.home = std::move(home);
  self->state.host = std::move(host);
  // Forwards a request about one run to its actor, or answers with an error naming the id.
  auto forward = [=](const std::string& id, auto... xs) -> caf::delegated<caf::message> {
    auto rp = self->make_response_promise();
    if (auto i = self->state.runs.find(id); i != self->state.runs.end())
      return rp.delegate(i->second, xs...);
    rp.deliver(unknown_run(id));
    return {};
  };
  return {
    [=](atoms::submit, run_request& req) { return submit(self, req); },
    [=](atoms::info, const std::string& id) { return forward(id, atoms::info::value); },
    [=](atoms::cancel, const std::string& id) { return forward(id, atoms::cancel::value); },
    [=](atoms::events, const std::string& id, std::uint64_t cursor, std::uint32_t wait_ms) {
      return forward(id, atoms::events::value, cursor, wait_ms);
    },
    [=](atoms::wait, const std::string& id) { return forward(id, atoms::wait::value); },
    [=](atoms::list) -> caf::result<std::vector<run_info>> {
      auto& order = self->state.order;
      auto rp = self->make_response_promise<std::vector<run_info>>();
      if (order.empty()) {
        rp.deliver(std::vector<run_info>{});
        return rp;
      }
      auto collected = std::make_shared<std::vector<run_info>>(order.size());
      auto pending = std::make_shared<std::size_t>(order.size());
      for (std::size_t i = 0; i < order.size(); ++i) {
        self->request(self->state.runs[order[i]], caf::infinite, atoms::info::value)
          .then([=](run_info& info) mutable {
            (*collected)[i] = std::move(info);
            if (--*pending == 0)
              rp.deliver(std::move(*collected));
          });
      }
      return rp;
    },
  };
}

} // namespace cdui::actors
