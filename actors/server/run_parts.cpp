// A run actor's DDP run across workers (docs/ddp.md, "Across workers"): rank 0's worker executes
// the run; each other worker gets its part of the ranks (a ddp_part actor) once rank 0 has said
// where its store listens, and the first part that fails fails the run.
#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/server/ddp_part.hpp"
#include "actors/server/run_actor_parts.hpp"
#include "messages/atoms.hpp"
#include "storage/credentials.hpp"

namespace cdui::actors::run_parts {

namespace {

/// Worker `worker`'s part of the ranks `first`.. on `devices`.
cdui::ddp_part part_of(const run_state& st, int first) {
  return {static_cast<std::int32_t>(st.setup.ranks.size()), first, st.setup.ranks, "", 0, st.ddp_secret};
}

/// The actor of `part`, whose ranks meet at `host`:`port`; `adopted`: a part a server before a
/// restart assigned, followed again.
void spawn_part(self_ptr self, const ddp_part_place& part, const std::string& host, std::int32_t port, bool adopted) {
  auto& st = self->state;
  auto ddp = part_of(st, part.first_rank);
  ddp.store_host = host;
  ddp.store_port = port;
  assign_run a{st.setup.info.id + "-rank" + std::to_string(part.first_rank), st.setup.info.name, st.setup.graph_json,
               st.setup.info.options, part.devices, st.setup.context.seed, std::move(ddp)};
  st.part_actors.push_back(self->spawn(
    worker_part, worker_part_setup{std::move(a), part.worker, st.setup.registry, self->address(), adopted}));
}

} // namespace

void add_rank_zero_part(self_ptr self, assign_run& a) {
  auto& st = self->state;
  if (st.setup.parts.empty())
    return;
  if (st.ddp_secret.empty())
    st.ddp_secret = storage::random_secret();
  a.ddp = part_of(st, 0);
}

void start_parts(self_ptr self, const std::vector<run_event>& events) {
  auto& st = self->state;
  if (st.setup.parts.empty() || !st.part_actors.empty())
    return;
  for (const auto& e : events) {
    if (e.type != "ddp_rendezvous")
      continue;
    auto data = nlohmann::json::parse(e.data, nullptr, false);
    if (!data.is_object() || !data["host"].is_string() || !data["port"].is_number_integer())
      return;
    for (const auto& part : st.setup.parts) {
      spdlog::info("run {}: ranks from {} go to worker '{}'", st.setup.info.id, part.first_rank, part.worker);
      spawn_part(self, part, data["host"].get<std::string>(), data["port"].get<std::int32_t>(), false);
    }
    return;
  }
}

void adopt_parts(self_ptr self) {
  for (const auto& part : self->state.setup.parts)
    spawn_part(self, part, "", 0, true);
}

void stop_parts(self_ptr self) {
  for (const auto& part : self->state.part_actors)
    self->send(part, atoms::stop::value, true);
}

void part_ended(self_ptr self, const std::string& worker, const run_outcome& outcome) {
  auto& st = self->state;
  spdlog::info("run {}: the part on worker '{}' ended {}", st.setup.info.id, worker, to_string(outcome.status));
  if (outcome.status != run_status::failed || !st.part_failure.empty() || is_final(st.setup.info.status))
    return;
  st.part_failure = outcome.error;
  // Rank 0 stops at once: its collectives would wait for the failed rank until they time out.
  if (st.setup.info.status == run_status::running)
    self->send(st.setup.registry, atoms::stop::value, st.setup.info.id, true);
}

run_outcome with_part_failure(const run_state& st, run_outcome outcome) {
  if (st.part_failure.empty() || outcome.status == run_status::succeeded)
    return outcome;
  return {run_status::failed, st.part_failure, outcome.final_metrics};
}

} // namespace cdui::actors::run_parts
