#include "actors/server/server_impl.hpp"

namespace cdui {

server::server() : server(config{}) {}

server::server(config cfg) : impl_(std::make_unique<impl>(cfg)) {}

server::~server() {
  {
    std::lock_guard lock{impl_->refollows->mutex};
    impl_->refollows->owner = nullptr;
  }
  shutdown();
  auto quit = [](const auto& actor) {
    if (actor)
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  };
  quit(impl_->watchdog);
  quit(impl_->search_watch);
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
