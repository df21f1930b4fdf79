#include "actors/server/run_queue.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <random>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/guarded.hpp"
#include "actors/server/run_actor.hpp"
#include "actors/server/run_options.hpp"
#include "devices/device.hpp"
#include "messages/clock.hpp"
#include "messages/atoms.hpp"
#include "messages/json_text.hpp"
#include "messages/run_outcome.hpp"
#include "messages/worker.hpp"
#include "runtime/validate.hpp"

namespace cdui::actors {

namespace {

/// For a request whose answer only confirms: a run actor that has ended meanwhile is no error, and
/// an unhandled error would end the queue (CAF's default for a request without an error handler).
const auto ignore_error = [](caf::error&) {};

using self_ptr = caf::stateful_actor<run_queue_state>*;

std::string new_run_id(const run_queue_state& st) {
  static std::mt19937_64 gen{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  for (;;) {
    std::string id;
    auto bits = gen();
    for (int i = 0; i < 8; ++i, bits >>= 4)
      id += hex[bits & 0xf];
    if (!std::filesystem::exists(st.cfg.home / "runs" / id) && !st.cfg.store->find(id))
      return id;
  }
}

/// The device a single-device run queues for: its option, else the first device a node of the
/// graph names, else the CPU. Returns the canonical key, or the refusal's sentence.
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

/// The keys of a device set: each must name a device this server offers, exactly.
std::variant<std::vector<std::string>, std::string>
device_set_keys(const std::vector<std::string>& set, const devices::host_inventory& host) {
  std::vector<std::string> keys;
  std::string offered;
  for (const auto& d : host.devices())
    offered += (offered.empty() ? "" : ", ") + d.name;
  for (const auto& text : set) {
    auto parsed = devices::parse_device(text);
    std::optional<std::string> key;
    if (auto* spec = std::get_if<devices::device_spec>(&parsed); spec && !spec->malformed) {
      auto resolved = devices::resolve_device(*spec, host.counts());
      if (!resolved.fallback_warning)
        key = resolved.name;
    }
    if (!key || std::none_of(host.devices().begin(), host.devices().end(),
                             [&](const auto& d) { return d.name == *key; }))
      return "option 'target.devices': this server does not offer " + text + " (it offers "
             + offered + ")";
    keys.push_back(*key);
  }
  return keys;
}

/// The devices a worker run executes on, by the worker's own names, and their queue keys
/// ("<worker>/<device>"); or the refusal's sentence. A worker must have connected since the server
/// started and offer every device; one that is away now is no refusal (the run waits for it).
std::variant<std::vector<std::string>, std::string>
worker_devices(const run_request& req, const runtime::validated_graph& g,
               const std::map<std::string, known_worker>& workers, bool resuming) {
  auto w = workers.find(req.worker);
  if (w == workers.end() && resuming && !req.devices.empty())
    return req.devices;  // checked when it was submitted; the worker has not come back yet
  if (w == workers.end()) {
    std::string known;
    for (const auto& [name, _] : workers)
      known += (known.empty() ? "" : ", ") + name;
    return "option 'target.worker': no worker named '" + req.worker
           + "' has connected to this server since it started"
           + (known.empty() ? std::string{" (none has)"} : " (known: " + known + ")");
  }
  const auto& offered = w->second.devices;
  auto offered_list = [&] {
    std::string list;
    for (const auto& o : offered)
      list += (list.empty() ? "" : ", ") + o;
    return list;
  };
  std::vector<std::string> wanted = req.devices;
  std::string field = "option 'target.devices'";
  if (wanted.empty() && !req.device.empty()) {
    wanted = {req.device};
    field = "option 'device'";
  }
  if (wanted.empty()) {
    // A node's device param names a card inside the run (renumbered from 0), not the worker's:
    // it says which kind the run needs, and the run gets the worker's first card of that kind.
    // Without one: seed 001, a worker run starts on the worker's first accelerator.
    std::string kind;
    for (const auto& node : g.g.nodes)
      if (node.was_given("device")) {
        auto d = node.params["device"].get<std::string>();
        kind = d == "auto" ? "" : devices::kind_of(d);
        field = "node '" + node.id + "' (" + node.type + "), param 'device'";
        break;
      }
    auto first = std::find_if(offered.begin(), offered.end(), [&](const std::string& d) {
      return kind.empty() ? d != "cpu" : devices::kind_of(d) == kind;
    });
    if (first == offered.end() && kind.empty())
      first = std::find(offered.begin(), offered.end(), "cpu");
    if (first == offered.end())
      return field + ": worker '" + req.worker + "' offers no " + kind + " device (it offers "
             + offered_list() + ")";
    wanted = {*first};
  }
  for (const auto& d : wanted)
    if (std::find(offered.begin(), offered.end(), d) == offered.end())
      return field + ": worker '" + req.worker + "' does not offer " + d + " (it offers "
             + offered_list() + ")";
  return wanted;
}

/// A run ready to be handed to its actor.
struct prepared_run {
  run_setup setup;
  std::vector<std::string> keys;
  /// The run's first events: run_warning {kind, message}, e.g. a device_fallback, or an
  /// isolation_fallback (a queued run on a thread although runs are isolated in processes).
  std::vector<std::pair<std::string, std::string>> warnings;
  /// A run for any worker or the one-shot pool: placed when a slot of its kind is free.
  std::optional<floating_run> floating;
};

/// The queue a run waits in: its first device's, or, until a floating run is placed, "any" (or
/// "one-shot" for the pool).
std::string queue_key_of(const prepared_run& p) {
  if (p.floating)
    return p.floating->pool ? "one-shot" : "any";
  return p.keys.front();
}

using devices::kind_of;

/// Whether a floating run may take `device`: one of its kind, or any accelerator when it names none.
bool fits(const floating_run& f, const std::string& device) {
  return f.kind.empty() ? kind_of(device) != "cpu" : kind_of(device) == f.kind;
}

/// The device kind a run for any worker asks for: its option's, else a node's, else none (the
/// first accelerator free); or the refusal's sentence when nothing this server knows offers it
/// (never when `resuming`: a run queued before a restart, before any worker is back).
std::variant<floating_run, std::string> floating_for(const run_request& req,
                                                     const runtime::validated_graph& g,
                                                     const run_queue_state& st,
                                                     bool resuming) {
  floating_run f;
  f.pool = req.worker == one_shot_pool;
  f.keeps_outputs = req.record_outputs;
  std::string device = req.device;
  if (device.empty())
    for (const auto& node : g.g.nodes)
      if (node.was_given("device")) {
        device = node.params["device"].get<std::string>();
        break;
      }
  f.kind = device.empty() || device == "auto" ? "" : kind_of(device);
  auto offers = [&](const std::vector<std::string>& devices) {
    return std::any_of(devices.begin(), devices.end(), [&](const std::string& d) { return fits(f, d); });
  };
  // After a restart no worker has reconnected yet: the run waits for them as it did before.
  if (resuming)
    return f;
  for (const auto& [name, w] : st.workers)
    if ((!f.pool || w.one_shot) && offers(w.devices))
      return f;
  std::vector<std::string> local;
  for (const auto& d : st.cfg.host.devices())
    local.push_back(d.name);
  if (!f.pool && offers(local))
    return f;
  std::string what = f.kind.empty() ? "an accelerator" : "a " + f.kind + " device";
  return f.pool ? "option 'target.pool': no one-shot worker offering " + what
                    + " has connected to this server since it started"
                : "option 'target.worker' \"any\": neither this server nor a worker that has "
                  "connected since it started offers " + what
                    + (f.kind.empty() ? " (give option 'device' \"cpu\" for a CPU slot)" : "");
}

/// `resuming`: a run queued before a restart, whose worker may not have reconnected yet.
std::variant<prepared_run, submit_result> prepare(self_ptr self, const run_request& req,
                                                  bool resuming = false) {
  auto& st = self->state;
  auto checked = runtime::validate_graph(std::string_view{req.graph_json});
  if (auto* errors = std::get_if<std::vector<runtime::graph_error>>(&checked))
    return submit_result{"", runtime::to_string(*errors)};
  prepared_run p;
  auto graph = std::make_shared<runtime::validated_graph>(
    std::move(std::get<runtime::validated_graph>(checked)));
  std::string run_device;
  if (is_placed_later(req.worker)) {
    auto f = floating_for(req, *graph, st, resuming);
    if (auto* refusal = std::get_if<std::string>(&f))
      return submit_result{"", *refusal};
    p.floating = std::get<floating_run>(f);
  } else if (!req.worker.empty()) {
    if (auto w = st.workers.find(req.worker);
        req.record_outputs && w != st.workers.end() && w->second.one_shot)
      return submit_result{"", "option 'record_outputs': worker '" + req.worker + "' is a one-shot "
                               "worker, which exits when its run ends, taking the outputs with it"};
    auto devices = worker_devices(req, *graph, st.workers, resuming);
    if (auto* refusal = std::get_if<std::string>(&devices))
      return submit_result{"", *refusal};
    p.setup.worker = req.worker;
    p.setup.worker_devices = std::get<std::vector<std::string>>(devices);
    auto w = st.workers.find(req.worker);
    bool open = w != st.workers.end() && w->second.open;
    for (const auto& d : p.setup.worker_devices) {
      p.keys.push_back(req.worker + "/" + d);
      // A worker's slots admit only while it is connected: an unknown or away one's stay closed.
      st.slots.set_open(p.keys.back(), open);
    }
  } else if (!req.devices.empty()) {
    auto keys = device_set_keys(req.devices, st.cfg.host);
    if (auto* refusal = std::get_if<std::string>(&keys))
      return submit_result{"", *refusal};
    p.keys = std::get<std::vector<std::string>>(keys);
    run_device = p.keys.front();
  } else {
    auto device = queue_device(req, *graph, st.cfg.host);
    if (auto* refusal = std::get_if<std::string>(&device))
      return submit_result{"", *refusal};
    auto resolved = std::get<devices::resolved_device>(device);
    p.keys = {resolved.name};
    // A node's device falls back with its own warning when it runs; warn here only for the option.
    if (!req.device.empty()) {
      if (resolved.fallback_warning)
        p.warnings.emplace_back("device_fallback", *resolved.fallback_warning);
      run_device = resolved.name;
    }
  }
  if (req.lane == "interactive") {
    if (static_cast<int>(st.interactive.size()) >= st.cfg.interactive_limit)
      return submit_result{"",
                           "the interactive lane is full: " + std::to_string(st.interactive.size())
                             + " interactive runs are running (at most "
                             + std::to_string(st.cfg.interactive_limit) + ", "
                             + interactive_limit_env + "); queue the run or try again later",
                           true};
    for (const auto& [id, session] : st.interactive)
      if (!req.session.empty() && session == req.session)
        return submit_result{"", "editor session '" + req.session
                                   + "' already has an interactive run (" + id + ")", true};
  }
  p.setup.graph = graph;
  auto& ctx = p.setup.context;
  ctx.device = run_device;
  if (req.has_seed)
    ctx.seed = req.seed;
  else if (req.lane == "interactive" && !req.session.empty())
    ctx.seed = st.session_seeds.try_emplace(req.session, std::random_device{}()).first->second;
  else
    ctx.seed = std::random_device{}();
  ctx.num_threads = st.cfg.host.cores_per_run(p.keys.empty() ? "" : p.keys.front());
  ctx.host = st.cfg.host.counts();
  ctx.deterministic = req.deterministic;
  ctx.execution_cache = req.lane == "interactive" && !req.session.empty();
  ctx.weights_persistent = req.weights_persistent;
  ctx.record_outputs = req.record_outputs;
  p.setup.store = st.cfg.store;
  p.setup.stop_deadline_ms = st.cfg.stop_deadline_ms;
  if (!st.cfg.exec_binary.empty() && req.lane != "interactive") {
    // The stores live in this process's memory; a run that uses them stays beside them.
    if (req.record_outputs || req.weights_persistent)
      p.warnings.emplace_back("isolation_fallback",
                              std::string{"option '"}
                                + (req.record_outputs ? "record_outputs" : "weights_persistent")
                                + "' uses the server's in-memory stores, so this run executes on "
                                  "a thread of the server, not in a process of its own");
    else
      p.setup.exec_binary = st.cfg.exec_binary;
  }
  p.setup.stores = st.cfg.stores;
  p.setup.session = req.session;
  p.setup.graph_json = req.graph_json;
  p.setup.registry = st.registry;
  return p;
}

/// Hands a prepared run to a new actor and queues it (or, interactive, starts it at once).
void launch(self_ptr self, prepared_run p, const run_request& req) {
  auto& st = self->state;
  auto id = p.setup.info.id;
  auto key = queue_key_of(p);
  p.setup.info.queue_key = key;
  p.setup.context.slot = key;
  p.setup.context.run_id = id;
  p.setup.context.run_dir = p.setup.dir->path();
  auto run = self->spawn(run_actor, std::move(p.setup), caf::actor_cast<caf::actor>(self));
  for (const auto& [kind, message] : p.warnings)
    self->send(run, atoms::append::value, std::string{"run_warning"},
               json_text(nlohmann::json{{"kind", kind}, {"message", message}}));
  st.runs.emplace(id, run);
  if (req.lane == "interactive") {
    st.interactive.emplace(id, req.session);
    st.started.insert(id);
    self->send(run, atoms::grant::value, std::string{"interactive"});
    return;
  }
  if (p.floating) {
    st.floating.push_back(id);
    st.floats[id] = *p.floating;
    return;
  }
  if (!p.setup.worker.empty())
    st.remote.insert(id);
  st.slots.enqueue(id, p.keys);
}

/// Places the floating runs, oldest first, each on the first free slot of its kind: connected,
/// non-draining workers in name order, then this server (never for the one-shot pool). A slot is
/// free when it would start a run at once, so a floating run never jumps a device's queue.
void place(self_ptr self) {
  auto& st = self->state;
  for (auto i = st.floating.begin(); i != st.floating.end();) {
    const auto& f = st.floats.at(*i);
    std::string worker;
    std::string device;
    for (const auto& [name, w] : st.workers) {
      if (!w.open || (f.pool && !w.one_shot) || (f.keeps_outputs && w.one_shot))
        continue;
      for (const auto& d : w.devices)
        if (fits(f, d) && st.slots.idle(name + "/" + d)) {
          worker = name;
          device = d;
          break;
        }
      if (!device.empty())
        break;
    }
    if (device.empty() && !f.pool)
      for (const auto& d : st.cfg.host.devices())
        if (fits(f, d.name) && st.slots.idle(d.name)) {
          device = d.name;
          break;
        }
    if (device.empty()) {
      ++i;
      continue;
    }
    auto id = *i;
    auto key = worker.empty() ? device : worker + "/" + device;
    self->send(st.runs.at(id), atoms::place::value, worker, std::vector<std::string>{device}, key,
               st.cfg.host.cores_per_run(device));
    st.slots.enqueue(id, {key});
    if (!worker.empty())
      st.remote.insert(id);
    st.floats.erase(id);
    i = st.floating.erase(i);
  }
}

/// Takes a floating run out before it is placed; false when it is not floating.
bool remove_floating(run_queue_state& st, const std::string& id) {
  auto i = std::find(st.floating.begin(), st.floating.end(), id);
  if (i == st.floating.end())
    return false;
  st.floating.erase(i);
  st.floats.erase(id);
  return true;
}

/// A queued run's place: in its device's queue, or among the floating runs.
std::uint32_t position_of(const run_queue_state& st, const std::string& id) {
  if (auto p = st.slots.position(id))
    return static_cast<std::uint32_t>(p);
  auto i = std::find(st.floating.begin(), st.floating.end(), id);
  return i == st.floating.end() ? 0 : static_cast<std::uint32_t>(i - st.floating.begin() + 1);
}

void pump(self_ptr self) {
  auto& st = self->state;
  place(self);
  for (const auto& id : st.slots.admit()) {
    st.started.insert(id);
    if (auto i = st.runs.find(id); i != st.runs.end())
      self->send(i->second, atoms::grant::value, id);
  }
}

submit_result submit(self_ptr self, run_request& req) {
  auto& st = self->state;
  if (st.shutting_down)
    return {"", "the server is shutting down; submit the run again once it has restarted", true};
  auto prepared = prepare(self, req);
  if (auto* refusal = std::get_if<submit_result>(&prepared))
    return *refusal;
  auto& p = std::get<prepared_run>(prepared);
  auto& info = p.setup.info;
  info.id = new_run_id(st);
  info.name = req.name;
  info.queue_key = queue_key_of(p);
  info.created_ms = now_ms();
  info.options = json_text(options_json(req));
  try {
    p.setup.dir = std::make_shared<storage::run_directory>(st.cfg.home, info.id, req.graph_json);
    // Recorded before it is acknowledged: a crash after this line loses nothing.
    st.cfg.store->insert({info, req.graph_json});
  } catch (const std::exception& e) {
    // The server's own failure (a full disk, say), not the request's: 503, not 400.
    return {"", std::string{"the server cannot record the run: "} + e.what(), true};
  }
  auto id = info.id;
  launch(self, std::move(p), req);
  pump(self);
  return {id, ""};
}

/// After a restart, a worker run that was running: its actor starts as running, it holds its slots,
/// and the registry waits for its worker to report it (or ends it after the grace period).
void adopt(self_ptr self, prepared_run p) {
  auto& st = self->state;
  auto id = p.setup.info.id;
  auto worker = p.setup.worker;
  auto cursor = st.cfg.store->last_cursor(id);
  p.setup.context.run_id = id;
  p.setup.context.run_dir = p.setup.dir->path();
  auto run = self->spawn(run_actor, std::move(p.setup), caf::actor_cast<caf::actor>(self));
  st.runs.emplace(id, run);
  st.started.insert(id);
  st.remote.insert(id);
  st.slots.hold(id, p.keys);
  self->send(st.registry, atoms::adopt::value, id, worker, run, cursor);
}

/// After a restart: runs that were running end interrupted (worker runs wait to be adopted);
/// queued runs are queued again, in their original order.
void resume(self_ptr self) {
  auto& st = self->state;
  for (auto& run : st.cfg.store->unfinished()) {
    auto& info = run.info;
    std::unique_ptr<storage::run_directory> dir;
    try {
      dir = std::make_unique<storage::run_directory>(st.cfg.home, info.id, run.graph_json);
    } catch (const std::exception&) {
    }
    auto end = [&](run_status status, const std::string& reason) {
      nlohmann::json data{{"reason", reason}};
      append_stored_event(*st.cfg.store, dir.get(), info.id, "execution_stopped", json_text(data));
      info.status = status;
      info.error = reason;
      info.finished_ms = now_ms();
      st.cfg.store->update(info);
    };
    // A run a worker executes may still be going there: it waits for its worker to bring it back.
    bool adoptable = info.status == run_status::running && st.registry
                     && info.queue_key.find('/') != std::string::npos;
    if (info.status == run_status::running && !adoptable) {
      end(run_status::interrupted, "the server stopped while the run was running");
      continue;
    }
    run_request req;
    req.graph_json = run.graph_json;
    req.name = info.name;
    auto options = nlohmann::json::parse(info.options, nullptr, false);
    auto err = apply_options(options, req);
    // A run for any worker or the pool that was placed on a worker is that worker's run now.
    if (adoptable && is_placed_later(req.worker)) {
      req.worker = info.queue_key.substr(0, info.queue_key.find('/'));
      req.devices.clear();
    }
    // A worker run resumes on the devices it was given, even before its worker reconnects.
    if (!req.worker.empty() && !is_placed_later(req.worker) && req.devices.empty()
        && !info.queue_key.empty())
      req.devices = {info.queue_key.substr(info.queue_key.find('/') + 1)};
    auto prepared = err.empty() ? prepare(self, req, true) : submit_result{"", err};
    if (auto* refusal = std::get_if<submit_result>(&prepared)) {
      end(run_status::failed, "could not be queued again after a restart: " + refusal->error);
      continue;
    }
    auto& p = std::get<prepared_run>(prepared);
    p.setup.info = info;
    p.setup.dir = std::move(dir);
    if (!p.setup.dir) {
      end(run_status::failed, "could not be queued again after a restart: its folder is gone");
      continue;
    }
    if (adoptable)
      adopt(self, std::move(p));
    else
      launch(self, std::move(p), req);
  }
  pump(self);
}

caf::error unknown_run(const std::string& id) {
  return caf::make_error(caf::sec::invalid_argument, "no run has the id '" + id + "'");
}

/// A shutdown waits for the runs this process executes; a worker's runs go on there, and the next
/// server adopts them.
void maybe_drained(self_ptr self) {
  auto& st = self->state;
  if (!st.shutting_down)
    return;
  for (const auto& id : st.started)
    if (!st.remote.count(id))
      return;
  for (auto& rp : st.drained)
    rp.deliver(true);
  st.drained.clear();
}

nlohmann::json queue_status(self_ptr self) {
  const auto& st = self->state;
  nlohmann::json queues = nlohmann::json::array();
  for (const auto& slot : st.slots.slots()) {
    // Its shared budgets: the card it shares with other offerers, a one-shot worker's single run.
    nlohmann::json shared = nlohmann::json::array();
    for (const auto& g : slot.groups) {
      auto with = st.slots.group_keys(g);
      with.erase(std::remove(with.begin(), with.end(), slot.key), with.end());
      shared.push_back({{"group", g},
                        {"limit", st.slots.group_limit(g)},
                        {"running", st.slots.group_running(g)},
                        {"with", with}});
    }
    queues.push_back({{"device", slot.key},
                      {"limit", slot.limit},
                      {"open", slot.open},
                      {"running", slot.running},
                      {"waiting", slot.waiting},
                      {"queue_length", slot.waiting.size()},
                      {"shared", shared}});
  }
  nlohmann::json lane = nlohmann::json::array();
  for (const auto& [id, session] : st.interactive)
    lane.push_back({{"run_id", id}, {"session", session}});
  return {{"kind", "run_queue"},
          {"mailbox", self->mailbox().size()},
          {"state",
           {{"queues", queues},
            {"interactive", {{"limit", st.cfg.interactive_limit}, {"running", lane}}},
            {"floating", st.floating},
            {"runs", st.runs.size()},
            {"shutting_down", st.shutting_down}}}};
}

bool is_card(const std::string& device, const std::string& uuid) {
  return !uuid.empty() && kind_of(device) != "cpu";
}

/// This server's device that is the card `uuid`, if it offers that card itself.
std::optional<std::string> local_key_of_card(const run_queue_state& st, const std::string& uuid,
                                             const std::string& device) {
  if (!is_card(device, uuid))
    return std::nullopt;
  for (const auto& d : st.cfg.host.devices())
    if (d.uuid == uuid)
      return d.name;
  return std::nullopt;
}

/// The shared budgets (DESIGN.md, seed 001 "Limits"): a card that several offerers share (this
/// server and workers, matched by UUID; CPUs are not cards) counts as one, under the smallest
/// limit among its online offerers (this server is always online); a one-shot worker's devices
/// admit one run between them. `joined`: a worker that just connected or changed, whose limits a
/// smaller one lowers (logged, as the seed asks).
void regroup(self_ptr self, const std::string& joined) {
  auto& st = self->state;
  std::map<std::string, std::vector<std::string>> groups_of;  // slot key -> its groups
  struct offerer {
    std::string key;
    bool online;
  };
  std::map<std::string, std::vector<offerer>> cards;  // UUID -> the slots that offer it
  for (const auto& d : st.cfg.host.devices())
    if (is_card(d.name, d.uuid))
      cards[d.uuid].push_back({d.name, true});
  for (const auto& [name, w] : st.workers) {
    for (std::size_t i = 0; i < w.devices.size(); ++i) {
      auto key = name + "/" + w.devices[i];
      if (is_card(w.devices[i], w.uuids[i]))
        cards[w.uuids[i]].push_back({key, w.open});
      if (w.one_shot)
        groups_of[key].push_back("one-shot:" + name);
    }
    if (w.one_shot)
      st.slots.set_group_limit("one-shot:" + name, 1);
  }
  for (const auto& [uuid, offerers] : cards) {
    if (offerers.size() < 2)
      continue;
    auto group = "card:" + uuid;
    int online = std::numeric_limits<int>::max();
    int any = std::numeric_limits<int>::max();
    std::string whose;
    for (const auto& o : offerers) {
      groups_of[o.key].push_back(group);
      any = std::min(any, st.slots.limit(o.key));
      if (o.online && st.slots.limit(o.key) < online) {
        online = st.slots.limit(o.key);
        whose = o.key;
      }
    }
    int limit = online != std::numeric_limits<int>::max() ? online : any;
    st.slots.set_group_limit(group, limit);
    for (const auto& o : offerers)
      if (st.slots.limit(o.key) <= limit)
        st.lowered.erase(o.key);
      else if (!joined.empty() && o.key.rfind(joined + "/", 0) == 0 && st.lowered.insert(o.key).second)
        spdlog::warn("{}: its limit of {} runs is lowered to {}: {} offers the same card ({}) with "
                     "that limit", o.key, st.slots.limit(o.key), limit, whose, uuid);
  }
  std::set<std::string> keys;
  for (const auto& slot : st.slots.slots())
    keys.insert(slot.key);
  for (const auto& [key, groups] : groups_of)
    keys.insert(key);
  for (const auto& key : keys)
    st.slots.set_groups(key, groups_of[key]);
}

/// Closes a worker's slot `key` and fails the runs waiting in it with `reason`.
void close_worker_slot(self_ptr self, const std::string& key, const std::string& reason) {
  auto& st = self->state;
  st.slots.set_open(key, false);
  std::vector<std::string> waiting;
  for (const auto& slot : st.slots.slots())
    if (slot.key == key)
      waiting = slot.waiting;
  for (const auto& id : waiting)
    if (st.slots.remove(id))
      if (auto run = st.runs.find(id); run != st.runs.end())
        self->send(run->second, atoms::stop::value, reason);
}

} // namespace

caf::behavior run_queue(self_ptr self, run_queue_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.registry = st.cfg.registry;
  for (const auto& d : st.cfg.host.devices())
    st.slots.set_limit(d.name, d.slot_limit);
  for (const auto& [key, limit] : st.cfg.limits)
    st.slots.set_limit(key, limit);
  if (st.cfg.resume)
    resume(self);
  // Forwards a request about a run that has not ended to its actor.
  auto active = [=](const std::string& id) -> caf::actor {
    auto i = self->state.runs.find(id);
    return i == self->state.runs.end() ? caf::actor{} : i->second;
  };
  return guarded_behavior(
    "run queue",
    [=](atoms::submit, run_request& req) { return submit(self, req); },
    [=](atoms::info, const std::string& id) -> caf::result<run_info> {
      if (auto run = active(id)) {
        auto rp = self->make_response_promise<run_info>();
        self->request(run, request_deadline, atoms::info::value)
          .then(
            [=](run_info& info) mutable {
              if (info.status == run_status::queued)
                info.queue_position = position_of(self->state, id);
              rp.deliver(std::move(info));
            },
            [=](caf::error& e) mutable {
              // The run's actor did not answer: what the store has is the next best thing.
              if (auto stored = self->state.cfg.store->find(id))
                rp.deliver(stored->info);
              else
                rp.deliver(std::move(e));
            });
        return rp;
      }
      if (auto stored = self->state.cfg.store->find(id))
        return stored->info;
      return unknown_run(id);
    },
    [=](atoms::list, const std::string& status, std::uint64_t limit,
        std::uint64_t offset) -> caf::result<storage::run_page> {
      std::optional<run_status> filter;
      if (!status.empty()) {
        filter = parse_run_status(status);
        if (!filter)
          return caf::make_error(caf::sec::invalid_argument,
                                 "status '" + status + "' is not one of queued, running, succeeded, "
                                                       "failed, cancelled, interrupted");
      }
      auto page = self->state.cfg.store->list(filter, limit, offset);
      for (auto& info : page.runs)
        if (info.status == run_status::queued)
          info.queue_position = position_of(self->state, info.id);
      return page;
    },
    [=](atoms::cancel, const std::string& id) -> caf::result<bool> {
      auto run = active(id);
      if (!run) {
        if (self->state.cfg.store->find(id))
          return false;
        return unknown_run(id);
      }
      bool dequeued = self->state.slots.remove(id) || remove_floating(self->state, id);
      if (dequeued)
        pump(self);  // the runs behind it move up; a device set it blocked may start
      self->delegate(run, atoms::cancel::value, dequeued);
      return caf::delegated<bool>{};
    },
    [=](atoms::events, const std::string& id, std::uint64_t cursor,
        std::uint32_t wait_ms) -> caf::result<event_batch> {
      if (auto run = active(id))
      {
        self->delegate(run, atoms::events::value, cursor, wait_ms);
        return caf::delegated<event_batch>{};
      }
      auto& store = *self->state.cfg.store;
      if (!store.find(id))
        return unknown_run(id);
      event_batch batch;
      batch.events = store.events_after(id, cursor, max_events_per_answer);
      batch.finished = batch.events.size() < max_events_per_answer;
      return batch;
    },
    [=](atoms::wait, const std::string& id) -> caf::result<run_info> {
      if (auto run = active(id))
      {
        self->delegate(run, atoms::wait::value);
        return caf::delegated<run_info>{};
      }
      if (auto stored = self->state.cfg.store->find(id))
        return stored->info;
      return unknown_run(id);
    },
    [=](atoms::erase, const std::string& id) {
      if (active(id))
        return erase_result::active;
      if (!self->state.cfg.store->erase(id))
        return erase_result::unknown;
      std::error_code ec;
      std::filesystem::remove_all(self->state.cfg.home / "runs" / id, ec);
      if (const auto& outputs = self->state.cfg.stores.run_outputs)
        caf::anon_send(outputs, atoms::erase::value, std::string{}, id);
      return erase_result::erased;
    },
    [=](atoms::ended, const std::string& id) {
      auto& st = self->state;
      st.slots.release(id);
      st.interactive.erase(id);
      st.started.erase(id);
      st.remote.erase(id);
      if (auto i = st.runs.find(id); i != st.runs.end()) {
        // After everything the queue forwarded to it earlier (messages from one sender keep their
        // order), so no request finds it gone.
        self->send(i->second, atoms::quit::value);
        st.runs.erase(i);
      }
      if (!st.shutting_down)
        pump(self);
      maybe_drained(self);
    },
    [=](atoms::worker_update, const std::string& name, const std::vector<device_offer>& offers,
        bool open, bool one_shot) {
      // A worker joined, changed or went: its devices' slots open or close, keyed worker/device.
      auto& st = self->state;
      std::vector<std::string> devices;
      std::vector<std::string> uuids;
      for (const auto& d : offers) {
        devices.push_back(d.name);
        uuids.push_back(d.uuid);
      }
      // Devices it no longer offers: their slots close, and the runs waiting for them fail.
      if (auto before = st.workers.find(name); before != st.workers.end())
        for (const auto& d : before->second.devices)
          if (std::find(devices.begin(), devices.end(), d) == devices.end())
            close_worker_slot(self, name + "/" + d, "worker '" + name + "' no longer offers " + d);
      st.workers[name] = known_worker{devices, uuids, open, one_shot};
      for (std::size_t i = 0; i < devices.size(); ++i) {
        const auto& d = devices[i];
        auto key = name + "/" + d;
        auto limit = st.cfg.limits.find(key);
        // seed 001: a worker without an override of its own uses this server's limit for a card
        // they share.
        auto local = local_key_of_card(st, uuids[i], d);
        st.slots.set_limit(key, limit != st.cfg.limits.end() ? limit->second
                                : local                      ? st.slots.limit(*local)
                                : d == "cpu"                 ? devices::cpu_slot_limit
                                                             : devices::accelerator_slot_limit);
        st.slots.set_open(key, open);
      }
      regroup(self, name);
      if (!st.shutting_down)
        pump(self);
    },
    [=](atoms::worker_gone, const std::string& name, const std::string& reason) {
      // An operator removed the worker: its slots close for good, the runs waiting for it fail,
      // and a new run may not name it until it joins again.
      auto& st = self->state;
      // Its slots, whether it joined since the start or only has runs queued from before it.
      std::vector<std::string> keys;
      for (const auto& slot : st.slots.slots())
        if (slot.key.rfind(name + "/", 0) == 0)
          keys.push_back(slot.key);
      for (const auto& key : keys)
        close_worker_slot(self, key, reason);
      st.workers.erase(name);
      regroup(self, "");
    },
    [=](atoms::drop, const std::string& session) {
      // The editor session ended: its next run, if it comes back, draws a new seed.
      return self->state.session_seeds.erase(session) > 0;
    },
    [=](atoms::shutdown) -> caf::result<bool> {
      auto& st = self->state;
      st.shutting_down = true;
      for (const auto& [id, run] : st.runs) {
        if (st.remote.count(id))
          continue;  // it goes on on its worker; the next server adopts it
        if (st.started.count(id))
          self->request(run, request_deadline, atoms::interrupt::value)
            .then([](bool) {}, ignore_error);
        else if (!st.cfg.resume && st.slots.remove(id))
          self->request(run, request_deadline, atoms::cancel::value, true)
            .then([](bool) {}, ignore_error);
      }
      auto rp = self->make_response_promise<bool>();
      st.drained.push_back(rp);
      maybe_drained(self);
      return rp;
    },
    [=](atoms::status) -> caf::result<std::string> {
      auto rp = self->make_response_promise<std::string>();
      auto me = std::make_shared<nlohmann::json>(queue_status(self));
      (*me)["children"] = nlohmann::json::array();
      auto pending = std::make_shared<std::size_t>(self->state.runs.size());
      if (*pending == 0) {
        rp.deliver(me->dump());
        return rp;
      }
      for (const auto& [id, run] : self->state.runs) {
        self->request(run, std::chrono::seconds(5), atoms::status::value)
          .then(
            [=](const std::string& child) mutable {
              (*me)["children"].push_back(nlohmann::json::parse(child));
              if (--*pending == 0)
                rp.deliver(me->dump());
            },
            [=](caf::error&) mutable {
              if (--*pending == 0)
                rp.deliver(me->dump());
            });
      }
      return rp;
    }
  );
}

} // namespace cdui::actors
