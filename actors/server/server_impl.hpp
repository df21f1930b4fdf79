#pragma once
// cdui::server's state (server.hpp's pimpl), for the files of the facade: server.cpp (runs,
// workers, status) and server_searches.cpp (sweeps, studies). Internal.

#include "actors/server/server.hpp"

#include <stdexcept>
#include <mutex>
#include <random>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/askers.hpp"
#include "actors/server/cache_store.hpp"
#include "actors/server/run_preparation.hpp"
#include "actors/server/run_queue.hpp"
#include "actors/server/search_watch.hpp"
#include "actors/policy/study_plan.hpp"
#include "actors/server/study_actor.hpp"
#include "actors/server/sweep_actor.hpp"
#include "actors/server/watchdog.hpp"
#include "actors/server/worker_registry.hpp"
#include "messages/atoms.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "messages/slot_key.hpp"
#include "messages/version.hpp"
#include "runtime/node_keys.hpp"
#include "runtime/stored_values.hpp"
#include "actors/server/server_settings.hpp"
#include "storage/home.hpp"

namespace cdui {

using setup::budget_from_env;
using setup::make_config;
using setup::make_queue_config;
using setup::number_setting;
using setup::seconds_setting;

struct server::impl {
  explicit impl(const config& c)
    : started_ms(now_ms()),
      home(c.home.empty() ? storage::default_home() : c.home),
      cfg(make_config(c)),
      system(cfg) {
    std::filesystem::create_directories(home / "runs");
    // Bound first: a server that cannot listen for agents throws before it picks up queued runs.
    if (!c.zmq_endpoint.empty()) {
      if (c.zmq_curve)
        curve = actors::load_or_create_curve_keys(home / "server.curve");
      bridge = std::make_shared<actors::zmq_bridge>(c.zmq_endpoint, curve.secret_key);
    }
    store = std::make_shared<storage::run_store>(home / "cdui.db");
    // No submit waits for a checkpoint's fsyncs (issue 16: 7-9 commits in 2,000 took 5-10 ms).
    store->checkpoint_in_background();
    // Before any actor exists: a bad device spec throws here, and an actor system with actors
    // left in it would wait for them forever on the way out.
    auto queue_config = make_queue_config(c, home, store);
    stop_deadline = std::chrono::milliseconds(queue_config.stop_deadline_ms);
    stores.execution_cache =
      system.spawn(actors::cache_store, budget_from_env(storage::execution_cache_budget), true);
    stores.run_outputs =
      system.spawn(actors::cache_store, budget_from_env(storage::run_output_store_budget), false);
    stores.node_state =
      system.spawn(actors::cache_store, budget_from_env(storage::node_state_store_budget), false);
    if (bridge) {
      // A heartbeat every 10 s; a lost worker's runs keep going for 5 minutes (docs/workers.md).
      policy::worker_table::config workers_config{
        version(), runtime::node_types_digest(), c.token,
        seconds_setting("CODEFYUI_WORKER_HEARTBEAT_S", 10.0, 0.05, 3600), {}};
      registry = system.spawn(actors::worker_registry, std::move(workers_config), bridge, store,
                              seconds_setting("CODEFYUI_WORKER_RESUME_GRACE_S",
                                              actors::default_resume_grace_s, 0, 86400));
    }
    queue_config.stores = stores;
    queue_config.registry = registry;
    queue = system.spawn(actors::run_queue, std::move(queue_config));
    if (bridge) {
      // The registry hears of the queue before the bridge gives it anything (its mailbox is in order).
      caf::anon_send(registry, atoms::attach::value, queue);
      // ... and of the worker runs the last server left running, which the queue adopts as it
      // starts (resume: an adopt each to the registry): the queue's first answer says that is
      // done, so no agent's hello reaches the registry before them. A hello that came first was
      // told to forget a run whose end its agent still held, and the adoption after it failed
      // the run as come back without it.
      (void)ask<run_queue_status>(atoms::status::value);
      // The same for the parts on other workers of DDP runs across workers, which their run actors
      // have the registry follow: a hello first would be told to forget its part.
      (void)ask<bool>(atoms::adopt::value);
      bridge->start(registry);
    }
    std::vector<actors::watched_actor> watched{
      {"run queue", caf::actor_cast<caf::strong_actor_ptr>(queue)},
      {"execution cache store", caf::actor_cast<caf::strong_actor_ptr>(stores.execution_cache)},
      {"run output store", caf::actor_cast<caf::strong_actor_ptr>(stores.run_outputs)},
      {"node state store", caf::actor_cast<caf::strong_actor_ptr>(stores.node_state)}};
    if (registry)
      watched.push_back({"worker registry", caf::actor_cast<caf::strong_actor_ptr>(registry)});
    watchdog = actors::spawn_watchdog(system, std::move(watched), c.on_failure);
    max_sweep_runs = c.max_sweep_runs > 0
                       ? c.max_sweep_runs
                       : static_cast<std::uint64_t>(number_setting(
                           policy::max_sweep_runs_env, static_cast<double>(policy::default_max_sweep_runs),
                           1, 1e9, "variants", true));
    // A sweep's or a study's actor that dies is followed again from the store, while this lives.
    refollows = std::make_shared<refollow_gate>();
    refollows->owner = this;
    search_watch = actors::spawn_search_watch(system, [gate = refollows](const std::string& kind, const std::string& id) {
      std::lock_guard lock{gate->mutex};
      if (gate->owner)
        gate->owner->refollow(kind, id);
    });
    if (c.resume)
      for (const auto& sweep : store->sweeps(true))
        follow_sweep_again(sweep);
    if (c.resume)
      for (const auto& study : store->studies(true))
        follow_study(study);
  }

  /// Spawns the actor of a study that has not ended, which goes on from its trials in cdui.db.
  void follow_study(const study_record& study) {
    auto actor = system.spawn(actors::study_supervisor, study, queue, store);
    caf::anon_send(search_watch, atoms::attach::value, std::string{"study"}, study.id, caf::actor_cast<caf::actor>(actor));
    std::lock_guard lock{sweeps_mutex};
    studies[study.id] = actor;
  }

  /// Follows an active sweep again with every run it has in the store (a start, or its actor died).
  void follow_sweep_again(const sweep_record& sweep) {
    std::vector<std::string> runs;
    for (const auto& child : store->sweep_children(sweep.id))
      runs.push_back(child.run.id);
    follow_sweep(sweep, std::move(runs));
  }

  /// The search watch's call: the actor of sweep or study `id` died; if the store still has the
  /// search active, a new actor follows it from there.
  void refollow(const std::string& kind, const std::string& id) {
    try {
      if (kind == "sweep") {
        if (auto sweep = store->find_sweep(id); sweep && sweep->state == "active")
          follow_sweep_again(*sweep);
      } else if (auto study = store->find_study(id); study && study->state == "active") {
        follow_study(*study);
      }
    } catch (const std::exception& e) {
      spdlog::error("{} {}: it cannot be followed again ({}); the next start follows it", kind, id, e.what());
    }
  }

  /// Cancels a sweep or a study (`actors`: sweeps or studies) through its actor; false when it
  /// has none, or it has ended.
  template <class Actor>
  bool cancel_search(const std::map<std::string, Actor>& actors, const std::string& id) {
    actors::sweep_actor actor;  // a study's actor takes a sweep's (cancel) too
    {
      std::lock_guard lock{sweeps_mutex};
      if (auto i = actors.find(id); i != actors.end())
        actor = i->second;
    }
    if (!actor)
      return false;
    // An actor that has quit (its search ended) answers with an error: nothing to cancel.
    return ask_actor<bool>(actor, "the search's actor", atoms::cancel::value).value_or(false);
  }

  /// Spawns the actor of a sweep that has not ended, which follows its runs to their end.
  void follow_sweep(const sweep_record& sweep, std::vector<std::string> runs) {
    auto actor = system.spawn(actors::sweep_supervisor, sweep, std::move(runs), queue, store);
    caf::anon_send(search_watch, atoms::attach::value, std::string{"sweep"}, sweep.id, caf::actor_cast<caf::actor>(actor));
    std::lock_guard lock{sweeps_mutex};
    sweeps[sweep.id] = actor;
  }

  /// Asks the run queue and waits for its answer, or the api_error in its place.
  template <class T, class... Ts>
  answer<T> ask(Ts&&... xs) {
    return asking.ask<T>(queue, "the run queue", caf::duration{actors::request_deadline},
                         std::forward<Ts>(xs)...);
  }

  /// Every request has a deadline: an actor that cannot answer (busy for good, or gone) costs
  /// its caller this long at most, never a thread forever. `part` names it in a failure.
  template <class T, class Handle, class... Ts>
  answer<T> ask_actor(const Handle& who, const std::string& part, Ts&&... xs) {
    return asking.ask<T>(who, part, caf::duration{actors::request_deadline}, std::forward<Ts>(xs)...);
  }

  /// The worker registry answers within its own time limits (an agent asked for outputs: 10 s),
  /// well inside the deadline of every request.
  template <class T, class... Ts>
  answer<T> ask_registry(Ts&&... xs) {
    return ask_actor<T>(registry, "the worker registry", std::forward<Ts>(xs)...);
  }

  /// An enroll, rekey or remove, asked of the registry.
  template <class Atom>
  enrollment ask_enrollment(Atom verb, const std::string& name) {
    if (!registry)
      return {name, "", "this server takes no workers (it has no ZeroMQ endpoint)", "unknown"};
    auto answer = ask_registry<enrollment>(verb, name);
    return answer ? *answer : enrollment{name, "", answer.error().message, "unavailable"};
  }

  /// A read of the home's store on the caller's thread: its value, or a store failure said as one.
  template <class F>
  auto read_store(F read) -> decltype(read()) {
    try {
      return read();
    } catch (const api_failure& e) {
      return api_error{e.kind(), e.what()};
    }
  }

  std::int64_t started_ms = 0;
  std::filesystem::path home;
  caf::actor_system_config cfg;
  caf::actor_system system;
  /// The facade's askers. Declared after the system: they end before it, which waits for them.
  actors::askers asking{system};
  std::shared_ptr<storage::run_store> store;
  actors::store_handles stores;
  actors::run_queue_actor queue;
  actors::curve_keys curve;  // empty unless the wire is encrypted
  std::shared_ptr<actors::zmq_bridge> bridge;
  actors::worker_registry_actor registry;
  caf::actor watchdog;  // reports the death of any actor above
  /// What the search watch calls back into: this, until ~server closes it (under its mutex, so no
  /// call is under way past that).
  struct refollow_gate {
    std::mutex mutex;
    impl* owner = nullptr;
  };
  std::shared_ptr<refollow_gate> refollows;
  caf::actor search_watch;  // follows a sweep's or a study's actor that dies again
  std::chrono::milliseconds stop_deadline{actors::default_stop_deadline_ms};
  std::uint64_t max_sweep_runs = policy::default_max_sweep_runs;
  std::mutex sweeps_mutex;
  std::map<std::string, actors::sweep_actor> sweeps;  // by id; an ended one's handle stays
  std::map<std::string, actors::study_actor> studies;  // the same, for studies (under sweeps_mutex)
  std::once_flag stopped;
};

} // namespace cdui
