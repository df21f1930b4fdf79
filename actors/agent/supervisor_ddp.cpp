// A run supervisor's DDP ranks (actors/agent/supervisor_ddp.hpp).
#include "actors/agent/supervisor_ddp.hpp"

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/policy/rank_failure.hpp"
#include "messages/json_text.hpp"
#include "storage/home.hpp"

namespace cdui::actors::supervisor_ddp {

namespace {

/// The run's run.json, or null when it cannot be read.
nlohmann::json run_json(const std::filesystem::path& dir) {
  std::ifstream in{dir / "run.json"};
  return nlohmann::json::parse(in, nullptr, false);
}

/// The file of the ranks that wait for rank 0's store.
constexpr const char* waiting_file = "ranks-waiting.json";

/// Rank 0's ddp_rendezvous event in the run's events.jsonl: its data, or null before it came.
nlohmann::json rendezvous_event(const std::filesystem::path& dir) {
  std::ifstream in{dir / "events.jsonl"};
  for (std::string line; std::getline(in, line) && !in.eof();) {
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_object() && e.value("type", "") == "ddp_rendezvous" && e["data"].is_object()
        && e["data"]["port"].is_number_integer())
      return e["data"];
  }
  return nullptr;
}

} // namespace

rank_plan plan_ranks(const assign_run& run, std::size_t cards, const std::string& rendezvous_host) {
  rank_plan p;
  if (!run.ddp.spread()) {
    p.world = ddp_world_size(run.graph_json, cards);
    for (int k = 1; k < p.world; ++k)
      p.others.push_back(k);
    return p;
  }
  // What a server never sends: ranks outside the run, a card list of another size, a part of rank
  // 0's without its store, another's without one.
  auto last = static_cast<std::int64_t>(run.ddp.first_rank) + static_cast<std::int64_t>(cards);
  if (run.ddp.first_rank < 0 || cards == 0 || last > run.ddp.world_size
      || run.ddp.devices.size() != static_cast<std::size_t>(run.ddp.world_size)
      || (run.ddp.first_rank > 0 && (run.ddp.store_host.empty() || run.ddp.store_port <= 0 || run.ddp.store_port > 65535))) {
    p.refused = "the assignment's DDP part is not one of the run's ranks (ranks " + std::to_string(run.ddp.first_rank)
                + " and on, on " + std::to_string(cards) + " cards, of " + std::to_string(run.ddp.world_size)
                + " ranks with " + std::to_string(run.ddp.devices.size()) + " cards, store at port "
                + std::to_string(run.ddp.store_port) + ")";
    return p;
  }
  p.world = run.ddp.world_size;
  p.first = run.ddp.first_rank;
  for (int k = p.first + 1; k < p.first + static_cast<int>(cards); ++k)
    p.others.push_back(k);
  // Rank 0's worker hosts the store at its rendezvous host, on a port rank 0 picks and reports;
  // the other workers get both from the server.
  bool hosts = p.first == 0;
  p.wait_for_store = hosts;
  p.run_json = {{"store", {{"host", hosts ? rendezvous_host : run.ddp.store_host}, {"port", hosts ? 0 : run.ddp.store_port}}},
                {"first_rank", p.first},
                {"devices", run.ddp.devices}};
  return p;
}

void watch_rank(self_ptr self, ddp_rank_setup setup) {
  self->state.ranks.push_back(self->spawn<caf::linked>(ddp_rank, std::move(setup)));
  ++self->state.ranks_running;
}

void kill_ranks(self_ptr self) {
  self->state.ranks_killed = true;
  for (const auto& r : self->state.ranks)
    self->send(r, agent_atoms::signal::value, SIGKILL);
}

void rank_ended(self_ptr self, int k, const std::string& failure) {
  auto& st = self->state;
  --st.ranks_running;
  spdlog::info("agent '{}': run {}: DDP rank {} exited", st.setup.worker, st.setup.run_id, k);
  // The first failure; none once the end is known, nor from a rank this supervisor killed.
  if (failure.empty() || st.rank_failure || st.ended || st.ranks_killed)
    return;
  spdlog::warn("agent '{}': run {}: {}", st.setup.worker, st.setup.run_id, failure);
  st.rank_failure = failure;
  st.rank_failure_after_exit = st.process_ended;
  if (!st.process_ended && st.pid > 0)
    ::kill(st.pid, SIGKILL);
  kill_ranks(self);
}

void keep_waiting_ranks(self_ptr self, const std::vector<int>& others, const std::map<std::string, std::string>& env) {
  storage::write_file_atomic(self->state.setup.dir / waiting_file,
                             json_text(nlohmann::json{{"ranks", others}, {"env", env}}) + "\n", true);
}

void start_waiting_ranks(self_ptr self) {
  auto& st = self->state;
  if (st.waiting_ranks.empty())
    return;
  std::error_code ignored;
  if (st.ended || st.process_ended) {  // rank 0 is gone: they would wait for nobody
    st.waiting_ranks.clear();
    std::filesystem::remove(st.setup.dir / waiting_file, ignored);
    return;
  }
  auto store = rendezvous_event(st.setup.dir);
  if (store.is_null())
    return;
  // The ranks here read the port from run.json, as an agent that restarts does.
  auto run = run_json(st.setup.dir);
  if (run.is_object() && run["ddp"].is_object()) {
    run["ddp"]["store"]["port"] = store["port"];
    storage::write_file_atomic(st.setup.dir / "run.json", json_text(run, 2) + "\n");
  }
  spdlog::info("agent '{}': run {}: rank 0's store listens at port {}; starting ranks {} to {}", st.setup.worker,
               st.setup.run_id, store["port"].get<int>(), st.waiting_ranks.front().k, st.waiting_ranks.back().k);
  for (auto& rank : st.waiting_ranks)
    watch_rank(self, std::move(rank));
  st.waiting_ranks.clear();
  std::filesystem::remove(st.setup.dir / waiting_file, ignored);
}

void find_ranks(self_ptr self) {
  auto& st = self->state;
  auto run = run_json(st.setup.dir);
  if (run.is_object() && run["ddp"].is_object() && run["ddp"]["first_rank"].is_number_integer()
      && run["ddp"]["devices"].is_array()) {
    st.first_rank = run["ddp"]["first_rank"].get<int>();
    st.world = static_cast<int>(run["ddp"]["devices"].size());
  }
  int last = st.first_rank;
  while (std::filesystem::exists(st.setup.dir / ddp_rank_pid_file(last + 1)))
    ++last;
  if (st.first_rank == 0 && !(run.is_object() && run["ddp"].is_object()))
    st.world = last + 1;
  auto worker = run.is_object() && run["ddp"].is_object() ? st.setup.worker : "";
  auto me = caf::actor_cast<run_supervisor_actor>(self);
  for (int k = st.first_rank + 1; k <= last; ++k)
    watch_rank(self, {k, st.world, st.setup.dir, std::nullopt, {}, me, worker});
  // Ranks the earlier agent kept for rank 0's store: they start here once it is up.
  std::ifstream in{st.setup.dir / waiting_file};
  auto waiting = nlohmann::json::parse(in, nullptr, false);
  if (!waiting.is_object() || !waiting["ranks"].is_array() || !waiting["env"].is_object())
    return;
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : waiting["env"].items())
    if (value.is_string())
      env[name] = value.get<std::string>();
  for (const auto& k : waiting["ranks"])
    if (k.is_number_integer() && k.get<int>() > last && k.get<int>() < st.world)
      st.waiting_ranks.push_back({k.get<int>(), st.world, st.setup.dir, st.setup.exec_binary, env, me, worker});
}

std::string outcome_file(const supervisor_state& st) {
  return st.first_rank == 0 ? "outcome.json" : "outcome-rank" + std::to_string(st.first_rank) + ".json";
}

run_outcome part_outcome(const supervisor_state& st, run_outcome outcome) {
  if (st.first_rank == 0 || outcome.status != run_status::failed)
    return outcome;
  // The process's error, or why it ended without an outcome: in a failed rank's words.
  outcome.error = ddp_rank_failure(st.first_rank, st.world, outcome, outcome.error, st.setup.worker)
                    .value_or(outcome.error);
  return outcome;
}

run_outcome run_end(const supervisor_state& st, run_outcome process) {
  if (st.killed_at_stop)
    return *st.killed_at_stop;
  if (!st.rank_failure
      || !policy::rank_failure_is_cause(process.status == run_status::failed, process.error, *st.rank_failure,
                                        st.rank_failure_after_exit))
    return process;
  return {run_status::failed, *st.rank_failure, process.final_metrics};
}

} // namespace cdui::actors::supervisor_ddp
