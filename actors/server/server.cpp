#include "actors/server/server.hpp"

#include <sys/sysinfo.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <mutex>
#include <random>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/askers.hpp"
#include "actors/server/cache_store.hpp"
#include "actors/server/run_preparation.hpp"
#include "actors/server/run_queue.hpp"
#include "actors/policy/study_plan.hpp"
#include "actors/server/study_actor.hpp"
#include "actors/server/sweep_actor.hpp"
#include "actors/policy/slot_limits.hpp"
#include "actors/server/watchdog.hpp"
#include "actors/server/worker_registry.hpp"
#include "devices/host_inventory.hpp"
#include "devices/card_memory.hpp"
#include "messages/atoms.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "messages/slot_key.hpp"
#include "messages/version.hpp"
#include "runtime/node_keys.hpp"
#include "runtime/stored_values.hpp"
#include "storage/home.hpp"

namespace cdui {

namespace {


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

/// A number of seconds from an environment variable, in ms; a bad value keeps the default, with a
/// logged warning naming the variable.
/// A number from the environment variable `var`, from `min` to `max` (a whole one when `whole`):
/// `fallback` when it is unset, and also, with a warning in the log naming the `unit`, when it is
/// not such a number.
double number_setting(const char* var, double fallback, double min, double max, const char* unit,
                      bool whole = false) {
  const char* text = std::getenv(var);
  if (text == nullptr || *text == '\0')
    return fallback;
  try {
    std::size_t used = 0;
    double x = std::stod(text, &used);
    if (used == std::string{text}.size() && x >= min && x <= max && (!whole || x == std::floor(x)))
      return x;
  } catch (const std::exception&) {
  }
  spdlog::warn("{}: '{}' is not a number of {} from {} to {}; using {}", var, text, unit, min, max,
               fallback);
  return fallback;
}

std::int64_t seconds_setting(const char* var, double default_seconds, double min, double max) {
  return static_cast<std::int64_t>(number_setting(var, default_seconds, min, max, "seconds") * 1000);
}

/// A store's budget from its setting; a bad value keeps the default, with a logged warning.
storage::store_budget budget_from_env(const storage::store_budget& defaults) {
  auto reading = storage::read_budget(defaults);
  if (!reading.warning.empty())
    spdlog::warn("{}", reading.warning);
  return reading.budget;
}

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
  q.stop_deadline_ms = seconds_setting("CODEFYUI_STOP_DEADLINE_S",
                                       actors::default_stop_deadline_ms / 1000.0, 0.05, 3600);
  q.cuda_context_bytes = mib_setting("CODEFYUI_EXECUTION_CUDA_CONTEXT_MIB", 768);
  q.sim_context_bytes = mib_setting("CODEFYUI_SIM_CONTEXT_MIB", 0);
  q.probe = [offers = q.host.devices()](const std::string& key)
    -> std::optional<std::pair<std::int64_t, std::int64_t>> {
    return measure_local_card(offers, key);
  };
  return q;
}

} // namespace

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
    if (c.resume)
      for (const auto& sweep : store->sweeps(true)) {
        std::vector<std::string> runs;
        for (const auto& child : store->sweep_children(sweep.id))
          runs.push_back(child.run.id);
        follow_sweep(sweep, std::move(runs));
      }
    if (c.resume)
      for (const auto& study : store->studies(true))
        follow_study(study);
  }

  /// Spawns the actor of a study that has not ended, which goes on from its trials in cdui.db.
  void follow_study(const study_record& study) {
    auto actor = system.spawn(actors::study_supervisor, study, queue, store);
    std::lock_guard lock{sweeps_mutex};
    studies[study.id] = actor;
  }

  /// Cancels a sweep or a study (`actors`: sweeps or studies) through its actor; false when it
  /// has none, or it has ended.
  bool cancel_search(const std::map<std::string, actors::sweep_actor>& actors, const std::string& id) {
    actors::sweep_actor actor;
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
  std::chrono::milliseconds stop_deadline{actors::default_stop_deadline_ms};
  std::uint64_t max_sweep_runs = policy::default_max_sweep_runs;
  std::mutex sweeps_mutex;
  std::map<std::string, actors::sweep_actor> sweeps;  // by id; an ended one's handle stays
  std::map<std::string, actors::study_actor> studies;  // the same, for studies (under sweeps_mutex)
  std::once_flag stopped;
};

server::server() : server(config{}) {}

server::server(config cfg) : impl_(std::make_unique<impl>(cfg)) {}

server::~server() {
  shutdown();
  auto quit = [](const auto& actor) {
    if (actor)
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  };
  quit(impl_->watchdog);
  {
    std::lock_guard lock{impl_->sweeps_mutex};
    for (const auto& [id, sweep] : impl_->sweeps)
      quit(sweep);
    for (const auto& [id, study] : impl_->studies)
      quit(study);
  }
  quit(impl_->queue);
  quit(impl_->stores.execution_cache);
  quit(impl_->stores.run_outputs);
  quit(impl_->stores.node_state);
  quit(impl_->registry);
  // The bridge's thread stops before the actor system goes (it sends to the registry).
  impl_->bridge.reset();
}

submit_result server::submit(run_request request) {
  auto answer = impl_->ask<submit_result>(atoms::submit::value, std::move(request));
  return answer ? *answer : submit_result{"", answer.error().message, true, {}};
}

sweep_submit_result server::submit_sweep(policy::sweep_request request) {
  auto refused = [](std::string why) {
    sweep_submit_result r;
    r.error = std::move(why);
    return r;
  };
  if (auto why = policy::limit_refusal(policy::variant_count(request.spec), impl_->max_sweep_runs); !why.empty())
    return refused(why);
  if (!request.spec.has_seed) {
    request.spec.has_seed = true;
    request.spec.seed = std::random_device{}();
  }
  sweep_record sweep;
  for (sweep.id = actors::random_id(); impl_->store->find_sweep(sweep.id); sweep.id = actors::random_id()) {
  }
  sweep.name = request.base.name.empty() ? "sweep " + sweep.id : request.base.name;
  sweep.graph_json = request.base.graph_json;
  sweep.spec = json_text(policy::spec_json(request.spec));
  sweep.objective = json_text(policy::objective_json(request.objective));
  sweep.options = json_text(policy::options_json(request.base));
  sweep.created_ms = now_ms();
  auto variants = policy::expand(request.spec);
  auto runs = policy::variant_runs(request.base, variants, sweep.name);
  if (auto* why = std::get_if<std::string>(&runs))
    return refused(*why);
  sweep_submission submission{sweep, std::get<std::vector<run_request>>(std::move(runs)), {}};
  submission.params.reserve(variants.size());
  for (const auto& v : variants)
    submission.params.push_back(json_text(policy::params_json(v)));
  auto answer = impl_->ask<sweep_submit_result>(atoms::sweep::value, std::move(submission));
  if (!answer)
    return sweep_submit_result{"", {}, answer.error().message, true};
  if (answer->ok())
    impl_->follow_sweep(sweep, answer->run_ids);
  return *answer;
}

answer<sweep_record> server::sweep(const std::string& sweep_id) {
  return impl_->read_store([&]() -> answer<sweep_record> {
    if (auto sweep = impl_->store->find_sweep(sweep_id))
      return std::move(*sweep);
    return api_error{error_kind::not_found, "no sweep has the id '" + sweep_id + "'"};
  });
}

std::vector<sweep_child> server::sweep_runs(const std::string& sweep_id) {
  return impl_->store->sweep_children(sweep_id);
}

std::vector<sweep_record> server::sweeps() {
  return impl_->store->sweeps();
}

answer<bool> server::cancel_sweep(const std::string& sweep_id) {
  auto found = sweep(sweep_id);
  if (!found)
    return found.error();
  return impl_->cancel_search(impl_->sweeps, sweep_id);
}

submit_result server::submit_study(policy::study_request request) {
  if (request.spec.trials > impl_->max_sweep_runs)
    return actors::refusal("budget.trials: " + std::to_string(request.spec.trials) + " trials, more than the "
                           + std::to_string(impl_->max_sweep_runs) + " a study may have (" + policy::max_sweep_runs_env
                           + "); nothing was queued");
  if (!request.spec.has_seed) {
    request.spec.has_seed = true;
    request.spec.seed = std::random_device{}();
  }
  study_record study;
  for (study.id = actors::random_id(); impl_->store->find_study(study.id); study.id = actors::random_id()) {
  }
  study.name = request.base.name.empty() ? "study " + study.id : request.base.name;
  study.graph_json = request.base.graph_json;
  study.spec = json_text(policy::study_spec_json(request.spec));
  study.objective = json_text(policy::objective_json(request.objective));
  study.options = json_text(policy::options_json(request.base));
  study.created_ms = now_ms();
  // Trial 0 is checked as a submit is and recorded with the study, or the study is refused whole.
  auto params = policy::propose(request.spec, request.objective.maximize, {}, 0);
  auto runs = policy::variant_runs(request.base, {params}, study.name, 0, "space");
  if (auto* why = std::get_if<std::string>(&runs))
    return actors::refusal(*why);
  trial_submission first{study.id, 0, json_text(policy::params_json(params)),
                         std::get<std::vector<run_request>>(runs).front(), study};
  auto answer = impl_->ask<submit_result>(atoms::trial::value, std::move(first));
  if (!answer)
    return actors::refusal(answer.error().message, true);
  if (!answer->ok()) {
    if (!answer->unavailable)
      answer->error = "trial 0 " + json_text(policy::params_json(params)) + ": " + answer->error + "; nothing was queued";
    return *answer;
  }
  impl_->follow_study(study);
  // The study's id, and its first trial's run in warnings' place: the caller reads study_id.
  submit_result r = *answer;
  r.run_id = study.id;
  return r;
}

answer<study_record> server::study(const std::string& study_id) {
  return impl_->read_store([&]() -> answer<study_record> {
    if (auto study = impl_->store->find_study(study_id))
      return std::move(*study);
    return api_error{error_kind::not_found, "no study has the id '" + study_id + "'"};
  });
}

std::vector<study_trial> server::study_trials(const std::string& study_id) {
  return impl_->store->study_trials(study_id);
}

std::vector<study_record> server::studies() {
  return impl_->store->studies();
}

answer<bool> server::cancel_study(const std::string& study_id) {
  auto found = study(study_id);
  if (!found)
    return found.error();
  return impl_->cancel_search(impl_->studies, study_id);
}

answer<run_info> server::info(const std::string& run_id) {
  return impl_->ask<run_info>(atoms::info::value, run_id);
}

std::vector<run_info> server::runs() {
  auto all = runs("", 0, 0).value().runs;
  return {all.rbegin(), all.rend()};
}

answer<storage::run_page> server::runs(const std::string& status, std::size_t limit, std::size_t offset) {
  return runs(status, "", "", limit, offset);
}

answer<storage::run_page> server::runs(const std::string& status, const std::string& worker,
                                       const std::string& device, std::size_t limit, std::size_t offset) {
  return impl_->ask<storage::run_page>(atoms::list::value, run_list_request{status, worker, device, limit, offset});
}

answer<event_batch> server::events(const std::string& run_id, std::uint64_t cursor,
                                   std::chrono::milliseconds wait) {
  auto ms = static_cast<std::uint32_t>(std::max<std::int64_t>(0, wait.count()));
  return impl_->asking.ask<event_batch>(impl_->queue, "the run queue",
                                        caf::duration{wait + actors::request_deadline},
                                        atoms::events::value, run_id, cursor, ms);
}

answer<std::vector<storage::metric_point>> server::metrics(const std::string& run_id,
                                                           const std::string& name) {
  return impl_->read_store([&]() -> answer<std::vector<storage::metric_point>> {
    if (!impl_->store->find(run_id))
      return api_error{error_kind::not_found, "no run has the id '" + run_id + "'"};
    return impl_->store->metrics(run_id, name);
  });
}

std::optional<run_event> server::last_event(const std::string& run_id, const std::string& type) {
  return impl_->store->last_event(run_id, type);
}

run_info server::wait(const std::string& run_id) {
  // Waits as long as the run takes: the caller asked for its end (its stop is bounded by the stop
  // deadline once it is cancelled).
  return impl_->asking.ask<run_info>(impl_->queue, "the run queue", caf::duration{caf::infinite},
                                     atoms::wait::value, run_id)
    .value();
}

bool server::cancel(const std::string& run_id) {
  return impl_->ask<bool>(atoms::cancel::value, run_id).value_or(false);
}

answer<erase_result> server::erase(const std::string& run_id) {
  return impl_->ask<erase_result>(atoms::erase::value, run_id);
}

server_status server::status(bool with_runs) {
  server_status out;
  out.home = impl_->home;
  out.queue = queue(with_runs);
  out.stores = caches();
  if (impl_->registry)
    out.workers = workers();
  if (impl_->bridge)
    out.bridge = impl_->bridge->stats();
  return out;
}

std::string server::zmq_endpoint() const {
  return impl_->bridge ? impl_->bridge->endpoint() : std::string{};
}

std::string server::zmq_public_key() const {
  return impl_->curve.public_key;
}

enrollment server::enroll_worker(const std::string& name) {
  return impl_->ask_enrollment(atoms::enroll::value, name);
}

enrollment server::rekey_worker(const std::string& name) {
  return impl_->ask_enrollment(atoms::rekey::value, name);
}

enrollment server::remove_worker(const std::string& name) {
  return impl_->ask_enrollment(atoms::remove::value, name);
}

bool server::drain_worker(const std::string& name, bool draining) {
  return impl_->registry && impl_->ask_registry<bool>(atoms::drain::value, name, draining).value_or(false);
}

answer<bool> server::share_device(const std::string& device, bool shared) {
  return impl_->ask<bool>(atoms::share::value, std::string{}, device, shared);
}

answer<bool> server::share_worker_device(const std::string& worker, const std::string& device, bool shared) {
  return impl_->ask<bool>(atoms::share::value, worker, device, shared);
}

memory_ledger_status server::memory() {
  return impl_->ask<memory_ledger_status>(atoms::report::value).value_or(memory_ledger_status{});
}

workers_status server::workers() {
  workers_status none;
  none.server_version = version();
  none.node_types_digest = runtime::node_types_digest();
  if (!impl_->registry)
    return none;
  return impl_->ask_registry<workers_status>(atoms::status::value).value_or(none);
}

run_queue_status server::queue(bool with_runs) {
  return impl_->ask<run_queue_status>(atoms::status::value, with_runs).value_or(run_queue_status{});
}

std::vector<cache_store_status> server::caches() {
  std::vector<cache_store_status> out;
  for (const auto& [store, part] : {std::pair{impl_->stores.execution_cache, "the execution cache"},
                                    std::pair{impl_->stores.run_outputs, "the run output store"},
                                    std::pair{impl_->stores.node_state, "the node state store"}})
    if (auto status = impl_->ask_actor<cache_store_status>(store, part, atoms::status::value))
      out.push_back(std::move(*status));
  return out;
}

std::optional<std::string> server::recorded_outputs(const std::string& run_id) {
  auto item = impl_->ask_actor<actors::stored_item>(impl_->stores.run_outputs, "the run output store",
                                                    atoms::get::value, std::string{}, run_id);
  if (!item || !item->value)
    return std::nullopt;
  const auto* outputs = std::any_cast<std::map<std::string, runtime::port_values>>(item->value.get());
  if (outputs == nullptr)
    return std::nullopt;
  // Described here, on the caller's thread, not inside the store's actor.
  nlohmann::json nodes = nlohmann::json::object();
  for (const auto& [node, values] : *outputs)
    nodes[node] = runtime::describe_values(values);
  return json_text(nodes);
}

outputs_reply server::worker_outputs(const std::string& run_id, const std::string& worker) {
  if (!impl_->registry)
    return {run_id, false, "", "this server takes no workers", true};
  auto reply = impl_->ask_registry<outputs_reply>(atoms::outputs::value, run_id, worker);
  return reply ? *reply : outputs_reply{run_id, false, "", reply.error().message, true};
}

bool server::close_session(const std::string& session) {
  bool had_seed = impl_->ask<bool>(atoms::drop::value, session).value_or(false);
  bool had_cache =
    impl_->ask_actor<bool>(impl_->stores.execution_cache, "the execution cache", atoms::drop::value, session)
      .value_or(false);
  return had_seed || had_cache;
}

void server::shutdown() {
  // Running runs are interrupted; one that misses its stop deadline is ended without its thread.
  std::call_once(impl_->stopped, [this] {
    (void)impl_->asking.ask<bool>(impl_->queue, "the run queue",
                                  caf::duration{impl_->stop_deadline + actors::request_deadline},
                                  atoms::shutdown::value);
  });
}

const std::filesystem::path& server::home() const {
  return impl_->home;
}

std::int64_t server::started_ms() const {
  return impl_->started_ms;
}

std::map<std::string, std::size_t> server::failed_by_reason() {
  std::map<std::string, std::size_t> out;
  for (const auto& [error, runs] : impl_->store->count_by_error(run_status::failed))
    out[std::string{failure_kind(error)}] += runs;
  return out;
}

} // namespace cdui
