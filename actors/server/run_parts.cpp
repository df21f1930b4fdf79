// A run actor's DDP run across workers (docs/ddp.md, "Across workers"): rank 0's worker executes
// the run; each other worker gets its part of the ranks (a ddp_part actor) once rank 0 has said
// where its store listens, and the first part that fails fails the run. The run's secret, its
// store's address, the parts that have ended and the first part's failure are kept in ddp.json in
// its folder (0600), so that a server that restarts sends a part its worker lacks, and only then.
#include <chrono>
#include <fstream>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/policy/rank_failure.hpp"
#include "actors/server/ddp_part.hpp"
#include "actors/server/run_actor_parts.hpp"
#include "messages/atoms.hpp"
#include "messages/json_text.hpp"
#include "storage/credentials.hpp"
#include "storage/home.hpp"

namespace cdui::actors::run_parts {

namespace {

/// The run's ddp.json: its secret, and rank 0's store once it has said where it listens.
std::filesystem::path ddp_file(const run_state& st) {
  return st.setup.context.run_dir / "ddp.json";
}

/// The run's ddp.json as a server before a restart wrote it; an empty object when there is none
/// (or not one a server writes).
nlohmann::json read_ddp_file(const run_state& st) {
  std::ifstream in{ddp_file(st)};
  auto kept = nlohmann::json::parse(in, nullptr, false);
  if (!kept.is_object() || !kept["secret"].is_string() || kept["secret"].get<std::string>().empty())
    return nlohmann::json::object();
  return kept;
}

/// Writes the run's ddp.json from what the actor knows (run_state). Throws when it cannot.
void keep_ddp_file(const run_state& st) {
  nlohmann::json kept{{"secret", st.ddp_secret}};
  if (!st.store_host.empty())
    kept["store"] = {{"host", st.store_host}, {"port", st.store_port}};
  if (!st.parts_ended.empty())
    kept["ended"] = st.parts_ended;
  if (!st.part_failure.empty())
    kept["part_failure"] = st.part_failure;
  storage::write_file_atomic(ddp_file(st), json_text(kept) + "\n", true);
}

/// Worker `worker`'s part of the ranks `first`.. on `devices`.
cdui::ddp_part part_of(const run_state& st, int first) {
  return {static_cast<std::int32_t>(st.setup.ranks.size()), first, st.setup.ranks, "", 0, st.ddp_secret};
}

/// The run id of the part whose first rank is `first`, as its worker's agent knows it.
std::string part_run_id(const run_state& st, int first) {
  return st.setup.info.id + "-rank" + std::to_string(first);
}

/// The actor of `part`, whose ranks meet at `host`:`port`; `adopted`: a part a server before a
/// restart assigned, followed again.
void spawn_part(self_ptr self, const ddp_part_place& part, const std::string& host, std::int32_t port, bool adopted) {
  auto& st = self->state;
  auto ddp = part_of(st, part.first_rank);
  ddp.store_host = host;
  ddp.store_port = port;
  assign_run a{part_run_id(st, part.first_rank), st.setup.info.name, st.setup.graph_json,
               st.setup.info.options, part.devices, st.setup.context.seed, std::move(ddp)};
  st.part_actors[part.worker] = self->spawn(
    worker_part, worker_part_setup{std::move(a), part.worker, st.setup.registry, self->address(), adopted});
}

/// Every part that has not ended, its ranks meeting at `host`:`port`.
void spawn_parts(self_ptr self, const std::string& host, std::int32_t port, bool adopted) {
  for (const auto& part : self->state.setup.parts) {
    if (self->state.parts_ended.count(part.worker))
      continue;
    spdlog::info("run {}: ranks from {} go to worker '{}'{}", self->state.setup.info.id, part.first_rank, part.worker,
                 adopted ? " (followed again)" : "");
    spawn_part(self, part, host, port, adopted);
  }
}

} // namespace

std::string add_rank_zero_part(self_ptr self, assign_run& a) {
  auto& st = self->state;
  if (st.setup.parts.empty())
    return "";
  if (st.ddp_secret.empty()) {
    auto kept = read_ddp_file(st);
    if (kept.empty()) {
      st.ddp_secret = storage::random_secret();
      try {
        keep_ddp_file(st);
      } catch (const std::exception& e) {
        return std::string{"the server cannot keep the run's DDP secret: "} + e.what();
      }
    } else {
      st.ddp_secret = kept["secret"].get<std::string>();
    }
  }
  a.ddp = part_of(st, 0);
  return "";
}

void start_parts(self_ptr self, const std::vector<run_event>& events) {
  auto& st = self->state;
  if (st.setup.parts.empty() || !st.part_actors.empty() || st.ddp_secret.empty())
    return;
  for (const auto& e : events) {
    if (e.type != "ddp_rendezvous")
      continue;
    auto data = nlohmann::json::parse(e.data, nullptr, false);
    if (!data.is_object() || !data["host"].is_string() || !data["port"].is_number_integer())
      return;
    st.store_host = data["host"].get<std::string>();
    st.store_port = data["port"].get<std::int32_t>();
    try {
      keep_ddp_file(st);
    } catch (const std::exception& e) {
      // The parts go all the same: only a restart of this server would not find where they meet.
      spdlog::error("run {}: cannot note where its ranks meet: {}", st.setup.info.id, e.what());
    }
    spawn_parts(self, st.store_host, st.store_port, false);
    return;
  }
}

namespace {

/// The registry follows each part spawned as adopted (the part's actor is the run its worker's
/// actor reports to); answers true once it does, for every part.
caf::result<bool> follow_adopted_parts(self_ptr self) {
  auto& st = self->state;
  if (st.part_actors.empty())
    return true;
  auto rp = self->make_response_promise<bool>();
  auto pending = std::make_shared<std::size_t>(st.part_actors.size());
  auto one_more = [rp, pending]() mutable {
    if (--*pending == 0)
      rp.deliver(true);
  };
  for (const auto& part : st.setup.parts) {
    auto actor = st.part_actors.find(part.worker);
    if (actor == st.part_actors.end())
      continue;  // ended before the restart
    self->request(st.setup.registry, request_deadline, atoms::adopt::value, part_run_id(st, part.first_rank),
                  part.worker, actor->second, std::uint64_t{0})
      .then([one_more](bool) mutable { one_more(); }, [one_more](caf::error&) mutable { one_more(); });
  }
  return rp;
}

} // namespace

caf::result<bool> adopt_parts(self_ptr self) {
  auto& st = self->state;
  if (st.setup.parts.empty())
    return true;
  auto kept = read_ddp_file(st);
  if (kept.empty()) {
    // No secret kept (a folder that lost it): parts that their workers have are followed, one
    // that a worker lacks fails the run (ddp_part.cpp).
    spawn_parts(self, "", 0, true);
    return follow_adopted_parts(self);
  }
  st.ddp_secret = kept["secret"].get<std::string>();
  // Parts that ended before the restart are not followed again (their agents forgot them), and the
  // first one's failure is still the run's.
  if (kept["ended"].is_array())
    for (const auto& worker : kept["ended"])
      if (worker.is_string())
        st.parts_ended.insert(worker.get<std::string>());
  if (kept["part_failure"].is_string())
    st.part_failure = kept["part_failure"].get<std::string>();
  const auto& store = kept["store"];
  // Before rank 0 said where its store listens, no part was sent: they go when it says so (its
  // agent sends the event to this server too).
  if (!store.is_object() || !store["host"].is_string() || !store["port"].is_number_integer())
    return true;
  st.store_host = store["host"].get<std::string>();
  st.store_port = store["port"].get<std::int32_t>();
  spawn_parts(self, st.store_host, st.store_port, true);
  return follow_adopted_parts(self);
}

void stop_parts(self_ptr self) {
  for (const auto& [worker, part] : self->state.part_actors)
    self->send(part, atoms::stop::value, true);
}

void release_when_parts_end(self_ptr self) {
  auto& st = self->state;
  // Its secret is of no more use: parts are only stopped from here on, never sent again.
  if (!st.setup.parts.empty()) {
    std::error_code ignored;
    std::filesystem::remove(ddp_file(st), ignored);
  }
  if (!st.part_actors.empty()) {
    spdlog::info("run {}: its cards are given back once its {} part(s) on other workers have ended",
                 st.setup.info.id, st.part_actors.size());
    st.release_after_parts = true;
    return;
  }
  self->send(st.queue, atoms::ended::value, st.setup.info.id);
}

void part_ended(self_ptr self, const std::string& worker, const run_outcome& outcome) {
  auto& st = self->state;
  spdlog::info("run {}: the part on worker '{}' ended {}", st.setup.info.id, worker, to_string(outcome.status));
  st.part_actors.erase(worker);
  if (st.release_after_parts) {
    if (st.part_actors.empty()) {
      st.release_after_parts = false;
      self->send(st.queue, atoms::ended::value, st.setup.info.id);
    }
    return;
  }
  if (is_final(st.setup.info.status))
    return;
  st.parts_ended.insert(worker);
  bool first_failure = outcome.status == run_status::failed && st.part_failure.empty()
                       && policy::part_failure_counts(outcome.error, st.stop->load());
  if (first_failure)
    st.part_failure = outcome.error;
  try {
    keep_ddp_file(st);
  } catch (const std::exception& e) {
    spdlog::error("run {}: cannot note that its part on worker '{}' ended: {}", st.setup.info.id, worker, e.what());
  }
  if (st.rank0_outcome && (first_failure || st.part_actors.empty())) {
    finish_held(self);
    return;
  }
  // Rank 0 stops at once: its collectives would wait for the failed rank until they time out.
  if (first_failure && st.setup.info.status == run_status::running)
    self->send(st.setup.registry, atoms::stop::value, st.setup.info.id, true);
}

run_outcome with_part_failure(const run_state& st, run_outcome outcome) {
  return policy::ddp_run_outcome(std::move(outcome), st.part_failure);
}

void rank0_ended(self_ptr self, const run_outcome& outcome, caf::response_promise answer) {
  auto& st = self->state;
  if (is_final(st.setup.info.status) || st.rank0_outcome) {  // ended already, or held: a report again
    answer.deliver(caf::unit);
    return;
  }
  if (!policy::awaits_part_failure(outcome, !st.part_failure.empty(), !st.part_actors.empty())) {
    finish(self, with_part_failure(st, outcome));
    answer.deliver(caf::unit);
    return;
  }
  // At most the stop deadline, and never past 10 s: its worker waits for the answer meanwhile.
  auto wait_ms = std::min<std::int64_t>(st.setup.stop_deadline_ms, max_part_report_wait_ms);
  spdlog::info("run {}: rank 0 lost the other ranks; its end waits up to {} ms for the part(s) on other "
               "workers to say why", st.setup.info.id, wait_ms);
  st.rank0_outcome = outcome;
  st.rank0_answer = std::move(answer);
  self->delayed_send(self, std::chrono::milliseconds(wait_ms), atoms::finished::value);
}

void finish_held(self_ptr self) {
  auto& st = self->state;
  if (!st.rank0_outcome)
    return;
  auto outcome = std::move(*st.rank0_outcome);
  st.rank0_outcome.reset();
  if (!is_final(st.setup.info.status))
    finish(self, with_part_failure(st, outcome));
  if (st.rank0_answer) {
    st.rank0_answer->deliver(caf::unit);
    st.rank0_answer.reset();
  }
}

} // namespace cdui::actors::run_parts
