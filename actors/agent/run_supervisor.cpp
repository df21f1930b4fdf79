#include "actors/agent/run_supervisor.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <vector>

#include <sys/wait.h>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/agent/ddp_rank.hpp"
#include "actors/agent/supervisor_ddp.hpp"
#include "actors/common/deadlines.hpp"
#include "actors/common/env_settings.hpp"
#include "actors/common/guarded.hpp"
#include "actors/common/run_process.hpp"
#include "messages/atoms.hpp"
#include "messages/json_text.hpp"
#include "storage/home.hpp"
#include "storage/run_directory.hpp"

namespace cdui::actors {

namespace {

using self_ptr = run_supervisor_actor::stateful_pointer<supervisor_state>;

/// How often a supervisor looks at its run: its events go out within this while it executes; an
/// ended run only waits for its acknowledgement.
constexpr auto executing_tick = std::chrono::milliseconds(20);
constexpr auto ended_tick = std::chrono::milliseconds(100);

/// Prepares the run's folder and starts its process; the reason when it cannot.
std::optional<std::string> launch(self_ptr self, const run_launch& l) {
  auto& st = self->state;
  const auto& plan = l.plan;
  auto ranks = supervisor_ddp::plan_ranks(l.run, plan.visible_devices.size(), st.setup.rendezvous_host);
  if (!ranks.refused.empty())
    return ranks.refused;
  try {
    // <home>/agents/<worker>/runs/<id>: run_directory makes runs/<id> under the agent's folder.
    storage::run_directory folder{st.setup.dir.parent_path().parent_path(), l.run.run_id,
                                  l.run.graph_json};
    nlohmann::json run{{"run_id", l.run.run_id},
                       {"name", l.run.name},
                       {"worker", st.setup.worker},
                       {"seed", l.run.seed},
                       {"device", plan.device},
                       {"visible_devices", plan.visible_devices},
                       {"device_aliases", plan.device_aliases},
                       {"options", nlohmann::json::parse(l.run.options_json, nullptr, false)}};
    if (!ranks.run_json.is_null())
      run["ddp"] = ranks.run_json;
    storage::write_file_atomic(folder.path() / "run.json", json_text(run, 2) + "\n");
  } catch (const std::exception& e) {
    return std::string{"cannot prepare the run's folder on the worker: "} + e.what();
  }
  // A stop can come as soon as the new process has a pid: start_exec keeps it waiting until
  // `cdui exec` installs its handlers. Its own session: the run outlives a signal to the agent's
  // process group.
  auto env = plan.environment();
  std::vector<std::string> rank_args;
  st.first_rank = ranks.first;
  st.world = ranks.world;
  if (ranks.world > 1) {
    // Each rank one thread, and the ranks on loopback unless this agent's environment says otherwise.
    env["OMP_NUM_THREADS"] = "1";
    for (const char* variable : {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"})
      if (std::getenv(variable) == nullptr)
        env[variable] = "lo";
    if (l.run.ddp.spread())
      env["CDUI_DDP_SECRET"] = l.run.ddp.secret;
    rank_args = {"--rank", std::to_string(ranks.first), "--world-size", std::to_string(ranks.world)};
  }
  pid_t pid = start_exec(st.setup.exec_binary, st.setup.dir, false, -1, env, rank_args);
  if (pid < 0)
    return "cannot start the run's process (fork failed)";
  auto me = caf::actor_cast<run_supervisor_actor>(self);
  auto worker = l.run.ddp.spread() ? st.setup.worker : "";
  if (ranks.wait_for_store)
    supervisor_ddp::keep_waiting_ranks(self, ranks.others, env);
  for (int k : ranks.others) {
    ddp_rank_setup rank{k, ranks.world, st.setup.dir, st.setup.exec_binary, env, me, worker};
    if (ranks.wait_for_store)
      st.waiting_ranks.push_back(std::move(rank));
    else
      supervisor_ddp::watch_rank(self, std::move(rank));
  }
  // An agent that restarts finds the process again by it (the run outlives the agent).
  storage::write_file_atomic(st.setup.dir / "exec.pid", std::to_string(pid) + "\n");
  st.pid = pid;
  spdlog::info("agent '{}': run {} started (pid {}) on {}", st.setup.worker, l.run.run_id, pid,
               l.run.devices.front());
  return std::nullopt;
}

/// Takes over a run an earlier agent process of this name left: still executing, or ended.
void recover(self_ptr self) {
  auto& st = self->state;
  st.child = false;
  st.pid = run_process_pid(st.setup.dir);
  // The other ranks an earlier agent started, by their pid files.
  supervisor_ddp::find_ranks(self);
  if (!run_process_alive(st.pid, st.setup.dir)) {
    st.pid = -1;
    st.ended = supervisor_ddp::part_outcome(st, read_outcome(st.setup.dir, supervisor_ddp::outcome_file(st)).value_or(run_outcome{
      run_status::failed, "the run's process ended while its agent was not running, without an outcome",
      "{}"}));
  }
  if (st.ended)
    supervisor_ddp::kill_ranks(self);  // its end is known: no rank outlives it
  const char* state = st.ended ? "ended" : "still executing";
  if (st.setup.after_failure)
    spdlog::info("agent '{}': a new supervisor follows run {} ({})", st.setup.worker,
                 st.setup.run_id, state);
  else
    spdlog::info("agent '{}': found run {} from an earlier agent ({})", st.setup.worker,
                 st.setup.run_id, state);
}

/// Events the run appended since the last call, in order: only whole lines (the last one may
/// still be being written), only those after the last cursor sent.
std::vector<run_event> new_events(supervisor_state& st) {
  std::vector<run_event> events;
  std::ifstream in{st.setup.dir / "events.jsonl", std::ios::binary};
  if (!in)
    return events;
  in.seekg(static_cast<std::streamoff>(st.sent_bytes));
  std::string line;
  while (events.size() < max_events_per_update && std::getline(in, line) && !in.eof()) {
    st.sent_bytes += line.size() + 1;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j["type"].is_string())
      continue;
    auto cursor = j.value("cursor", std::uint64_t{0});
    if (cursor <= st.sent_cursor)
      continue;  // the server has it (after a rewind to its cursor)
    st.sent_cursor = cursor;
    events.push_back({cursor, j.value("time_ms", std::int64_t{0}), j["type"].get<std::string>(),
                      json_text(j["data"])});
  }
  return events;
}

/// Written in the run's folder once the server has its end (or has forgotten it): a restarted
/// agent does not take the run over again.
void mark_acked(self_ptr self) {
  storage::write_file_atomic(self->state.setup.dir / "acked", "");
}

/// A stop was asked for (interrupt or not), or the server forgot the run: what has not ended by
/// the deadline is killed (run_exited).
void arm_stop_deadline(supervisor_state& st, bool interrupt) {
  if (st.stop_deadline)
    return;
  st.stop_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(st.setup.stop_deadline_ms);
  st.stop_interrupts = interrupt;
}

/// Whether its process has ended since the last look (a child is reaped here).
bool process_exited(supervisor_state& st, int& status) {
  if (st.ended || st.process_ended || st.pid <= 0)
    return false;
  return st.child ? ::waitpid(st.pid, &status, WNOHANG) != 0  // -1: reaped elsewhere already
                  : !run_process_alive(st.pid, st.setup.dir);
}

/// Whether the run has ended: its process (rank 0) and, under DDP, every other rank. A rank that
/// fails ends the others (the run fails with its error); after rank 0, the others have 10 s to
/// exit on their own.
bool run_exited(self_ptr self) {
  auto& st = self->state;
  int status = 0;
  if (process_exited(st, status)) {
    st.process_ended = true;
    st.process_status = status;
  }
  auto now = std::chrono::steady_clock::now();
  if (st.stop_deadline && now > *st.stop_deadline && !st.ranks_killed && !st.ended) {
    // Asked to stop and still running (stuck in a collective, or stopped): killed, with its ranks.
    // A run whose process had ended already keeps its outcome; only its other ranks lingered.
    spdlog::warn("agent '{}': run {} did not stop within {} s; killing it", st.setup.worker, st.setup.run_id,
                 seconds_text(st.setup.stop_deadline_ms));
    if (!st.process_ended) {
      st.killed_at_stop = run_outcome{st.stop_interrupts ? run_status::interrupted : run_status::cancelled,
                                      "it did not stop within " + seconds_text(st.setup.stop_deadline_ms)
                                        + " s of being asked to, so its processes were killed",
                                      "{}"};
      if (st.pid > 0)
        ::kill(st.pid, SIGKILL);
    }
    supervisor_ddp::kill_ranks(self);
  }
  if (st.ended || !st.process_ended)
    return false;
  if (st.ranks_running > 0) {
    if (!st.ranks_deadline)
      st.ranks_deadline = now + std::chrono::seconds(10);
    else if (now > *st.ranks_deadline)
      supervisor_ddp::kill_ranks(self);
    return false;
  }
  return true;
}

/// One look at the run: new events out, its end once its process has exited. False when the
/// supervisor is done (a forgotten run whose process has exited).
bool pump(self_ptr self) {
  auto& st = self->state;
  supervisor_ddp::start_waiting_ranks(self);
  bool exited = run_exited(self);
  bool linked = !st.link.socket.expired();
  // Read after the exit check: once it has exited, everything it wrote is in the file. What could
  // not be sent is read again (the socket says so with an unsent), so nothing is skipped.
  bool caught_up = true;
  if (linked && !st.forgotten) {
    auto bytes = st.sent_bytes;
    auto cursor = st.sent_cursor;
    auto events = new_events(st);
    if (!events.empty()) {
      caught_up = events.size() < max_events_per_update;
      auto me = caf::actor_cast<run_supervisor_actor>(self);
      if (!send_to_server(st.link, wire::message_type::run_update,
                          run_update{st.setup.run_id, std::move(events)}, [me, bytes, cursor](bool sent) {
                            if (!sent)
                              caf::anon_send(me, agent_atoms::unsent::value, false, bytes, cursor);
                          })) {
        st.sent_bytes = bytes;
        st.sent_cursor = cursor;
        caught_up = false;
      }
    }
  }
  if (exited && st.forgotten) {
    mark_acked(self);
    self->quit();
    return false;
  }
  if (exited) {
    st.ended = supervisor_ddp::part_outcome(st, read_outcome(st.setup.dir, supervisor_ddp::outcome_file(st)).value_or(run_outcome{
      run_status::failed,
      st.child ? process_exit_reason(st.process_status)
               : "the run's process ended without an outcome while its agent was restarting",
      "{}"}));
    st.ended = supervisor_ddp::run_end(st, *st.ended);
    spdlog::info("agent '{}': run {} ended {}{}{}", st.setup.worker, st.setup.run_id,
                 to_string(st.ended->status), st.ended->error.empty() ? "" : ": ", st.ended->error);
    self->send(st.setup.agent, atoms::ended::value, st.setup.run_id);
  }
  // The end goes after the last event, and again after a reconnect until it is acknowledged.
  if (st.ended && linked && caught_up && !st.end_sent && !st.forgotten) {
    auto me = caf::actor_cast<run_supervisor_actor>(self);
    st.end_sent = send_to_server(st.link, wire::message_type::run_done,
                                 run_done{st.setup.run_id, *st.ended, st.sent_cursor}, [me](bool sent) {
                                   if (!sent)
                                     caf::anon_send(me, agent_atoms::unsent::value, true,
                                                    std::uint64_t{0}, std::uint64_t{0});
                                 });
  }
  return true;
}

void schedule_tick(self_ptr self) {
  self->delayed_send(self, self->state.ended ? ended_tick : executing_tick, atoms::tick::value);
}

} // namespace

bool stop_run_process(int pid, const std::filesystem::path& dir) {
  if (pid <= 0)
    return false;
  // A child that has not exited yet (waitpid says 0), whatever it executes by now.
  bool child = ::waitpid(pid, nullptr, WNOHANG) == 0;
  if (!child && !run_process_alive(pid, dir))
    return false;
  ::kill(pid, SIGKILL);
  if (child)
    ::waitpid(pid, nullptr, 0);
  return true;
}

int run_process_pid(const std::filesystem::path& dir, const std::string& file) {
  int pid = -1;
  std::ifstream in{dir / file};
  in >> pid;
  return in ? pid : -1;
}

bool run_process_alive(int pid, const std::filesystem::path& dir) {
  if (pid <= 0 || ::kill(pid, 0) != 0)
    return false;
  std::ifstream in{"/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary};
  std::string cmdline{std::istreambuf_iterator<char>{in}, {}};
  return cmdline.find(std::string{"exec"} + '\0' + dir.string()) != std::string::npos;
}

run_supervisor_actor::behavior_type run_supervisor(self_ptr self, supervisor_setup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  st.link = st.setup.link;
  if (st.setup.launch) {
    if (auto why = launch(self, *st.setup.launch)) {
      // Answered at once, never followed: the server fails the run with the reason.
      send_to_server(st.link, wire::message_type::run_done,
                     run_done{st.setup.run_id,
                              {run_status::failed, "worker '" + st.setup.worker + "': " + *why, "{}"},
                              0});
      self->quit();
      return quit_behavior<run_supervisor_actor>();
    }
    self->send(st.setup.agent, agent_atoms::started::value, st.setup.run_id);
  } else {
    recover(self);
    if (st.ended)
      self->send(st.setup.agent, atoms::ended::value, st.setup.run_id);
  }
  schedule_tick(self);
  // Not guarded: a supervisor whose handler throws dies, and the agent fails its run with the reason.
  return {
    [=](atoms::tick) {
      if (pump(self))
        schedule_tick(self);
    },
    [=](agent_atoms::link, wire_link link) { self->state.link = std::move(link); },
    [=](agent_atoms::unsent, bool end, std::uint64_t bytes, std::uint64_t cursor) {
      auto& st = self->state;
      if (end) {
        st.end_sent = false;  // the next look sends it again
      } else if (bytes < st.sent_bytes) {
        // Some of what was read never left: from there, again.
        st.sent_bytes = bytes;
        st.sent_cursor = cursor;
      }
    },
    [=](agent_atoms::resend, std::uint64_t cursor) {
      auto& st = self->state;
      if (cursor < st.sent_cursor) {
        // Some of what was sent never arrived (the connection was down): from its cursor, again.
        st.sent_bytes = 0;
        st.sent_cursor = cursor;
      }
      st.end_sent = false;  // the next look sends what is missing, then the end
    },
    [=](agent_atoms::forget) {
      auto& st = self->state;
      if (st.ended) {  // its end was recorded; only the acknowledgement was lost
        mark_acked(self);
        self->quit();
        return;
      }
      spdlog::info("agent '{}': the server no longer follows run {}; stopping it", st.setup.worker,
                   st.setup.run_id);
      st.forgotten = true;
      if (st.pid > 0)
        ::kill(st.pid, SIGTERM);
      arm_stop_deadline(st, false);
    },
    [=](agent_atoms::ack) {
      mark_acked(self);
      self->quit();
    },
    [=](atoms::stop, bool interrupt) {
      auto& st = self->state;
      if (st.ended || st.pid <= 0)
        return;
      spdlog::info("agent '{}': {} run {}", st.setup.worker, interrupt ? "interrupting" : "cancelling",
                   st.setup.run_id);
      ::kill(st.pid, interrupt ? SIGUSR1 : SIGTERM);
      arm_stop_deadline(st, interrupt);
      // Rank 0 alone: the ranks agree after every batch whether to stop, so they stop at the same
      // batch (a rank signalled before it joined the others would leave them waiting); the other
      // ranks that do not end with it are ended 10 s after it.
    },
    [=](agent_atoms::rank_ended, int k, const std::string& failure) { supervisor_ddp::rank_ended(self, k, failure); },
    [=](atoms::quit) { self->quit(); },
  };
}

} // namespace cdui::actors
