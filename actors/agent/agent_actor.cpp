#include "actors/agent/agent_actor.hpp"
#include "actors/agent/agent_parts.hpp"

#include <algorithm>
#include <csignal>
#include <fstream>

#include <sys/sysinfo.h>
#include <sys/wait.h>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/agent/ddp_rank.hpp"
#include "actors/agent/run_supervisor.hpp"
#include "actors/common/guarded.hpp"
#include "actors/common/run_process.hpp"
#include "actors/policy/launch_plan.hpp"
#include "devices/device.hpp"
#include "devices/card_memory.hpp"
#include "messages/atoms.hpp"
#include "messages/digest.hpp"
#include "messages/json_text.hpp"
#include "messages/version.hpp"
#include "runtime/node_keys.hpp"
#include "storage/credentials.hpp"
#include "storage/home.hpp"
#include "storage/server_files.hpp"

namespace cdui::actors {

namespace {

using namespace agent_parts;

/// How often the agent looks at its connection (hello, heartbeat, endpoint, one-shot end).
constexpr auto tick_interval = std::chrono::milliseconds(50);
/// How often an agent that has no welcome says hello again (a hello sent while the connection is
/// still being made is dropped), and how often it re-reads server.json.
constexpr auto hello_interval = std::chrono::milliseconds(250);
constexpr auto endpoint_check_interval = std::chrono::seconds(2);
/// How long an agent hears nothing from a server before it says what to check.
constexpr auto silence_hint_after = std::chrono::seconds(20);
/// The shortest heartbeat interval a welcome may set.
constexpr std::uint32_t min_heartbeat_ms = 50;
/// How long a stopping agent waits for the server to hear its goodbye (its socket drops what is
/// still queued when it closes); past it, the agent stops anyway.
constexpr auto goodbye_deadline = std::chrono::seconds(1);

template <class T>
void send_now(self_ptr self, wire::message_type type, const T& payload) {
  send_to_server(wire_link{self->state.socket}, type, payload);
}

/// Spawns and monitors the supervisor of a run: a new one (`launch`), or one taken over from its
/// folder.
void supervise(self_ptr self, const std::string& id, std::optional<run_launch> launch,
               bool after_failure = false) {
  auto& st = self->state;
  auto devices = launch ? launch->run.devices : std::vector<std::string>{};
  supervisor_setup s{id,
                     st.setup.name,
                     runs_dir(st) / id,
                     std::move(launch),
                     st.setup.exec_binary,
                     current_link(st),
                     caf::actor_cast<agent_actor>(self),
                     after_failure,
                     st.setup.rendezvous_host,
                     st.setup.stop_deadline_ms};
  auto& r = st.runs[id];
  r.dir = s.dir;
  r.executing = true;
  if (!after_failure)
    r.devices = std::move(devices);
  r.supervisor = self->spawn<caf::monitored>(run_supervisor, std::move(s));
}

/// Starts the run `a` on its cards, or says why it cannot.
void launch(self_ptr self, const assign_run& a) {
  auto& st = self->state;
  auto plan = policy::plan_launch(a.devices, st.setup.offers);
  if (auto* why = std::get_if<std::string>(&plan)) {
    send_now(self, wire::message_type::run_done,
             run_done{a.run_id, {run_status::failed, "worker '" + st.setup.name + "': " + *why, "{}"}, 0});
    return;
  }
  supervise(self, a.run_id, run_launch{a, std::get<policy::launch_plan>(std::move(plan))});
}

/// Whether a run the server forgot is still being stopped here on one of the cards of `a`.
bool stopping_forgotten(const agent_state& st, const assign_run& a) {
  auto on_its_cards = [&](const agent_run& r) {
    return r.devices.empty() || std::any_of(a.devices.begin(), a.devices.end(), [&](const std::string& d) {
             return std::find(r.devices.begin(), r.devices.end(), d) != r.devices.end();
           });
  };
  return std::any_of(st.runs.begin(), st.runs.end(),
                     [&](const auto& r) { return r.second.forgotten && on_its_cards(r.second); });
}

/// The held run `run_id` (st.held.end() when none is).
std::vector<assign_run>::iterator held(agent_state& st, const std::string& run_id) {
  return std::find_if(st.held.begin(), st.held.end(), [&](const assign_run& a) { return a.run_id == run_id; });
}

/// Starts the run `a`, or holds it while a forgotten run is still being stopped on its cards.
void launch_or_hold(self_ptr self, const assign_run& a) {
  auto& st = self->state;
  if (stopping_forgotten(st, a))
    st.held.push_back(a);
  else
    launch(self, a);
}

/// Starts the runs held for forgotten ones whose cards no forgotten run is being stopped on.
void launch_held(self_ptr self) {
  auto runs = std::move(self->state.held);
  self->state.held.clear();
  for (const auto& a : runs)
    launch_or_hold(self, a);
}

/// The runs an earlier agent process of this name left: still executing, or ended unreported.
void recover_runs(self_ptr self) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator{runs_dir(self->state), ec}) {
    const auto& dir = entry.path();
    if (!std::filesystem::exists(dir / "run.json") || std::filesystem::exists(dir / "acked"))
      continue;
    supervise(self, dir.filename().string(), std::nullopt);
    self->state.had_run = true;  // a one-shot agent restarted mid-run still exits when that run is done
  }
}

/// The agent's end: its supervisors quit (their processes run on, unless the machine leaves with
/// the agent: --ephemeral), the owner hears why.
void end(self_ptr self, const std::string& reason, bool was_refused) {
  auto& st = self->state;
  for (const auto& [id, r] : st.runs) {
    self->send(r.supervisor, atoms::quit::value);
    if (st.setup.ephemeral && stop_run_processes(r.dir))
      spdlog::info("agent '{}': run {}'s process is stopped: its machine leaves with the agent", st.setup.name, id);
  }
  st.socket.reset();
  if (st.setup.owner)
    caf::anon_send(st.setup.owner, atoms::ended::value, reason, was_refused);
  self->quit();
}

/// The agent stops of itself (stop, or a one-shot agent whose run is done): a server that welcomed
/// it hears goodbye, so it shows the worker disconnected at once, and the agent ends when the
/// server says goodbye back, or after goodbye_deadline. Refused agents end at once (end()).
void leave(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (st.leaving)
    return;
  st.leaving = true;
  if (!st.welcomed || !st.socket) {
    end(self, "", false);
    return;
  }
  if (st.setup.ephemeral)
    send_now(self, wire::message_type::goodbye, goodbye{why.empty() ? leaving_reason() : why, true});
  else
    send_now(self, wire::message_type::goodbye, goodbye{why, false});
  self->delayed_send(self, goodbye_deadline, atoms::deadline::value);
}

/// One look at the connection: the endpoint, a hello until welcomed, a heartbeat once welcomed.
/// False when the agent is leaving (a one-shot agent whose run is done).
bool tick(self_ptr self) {
  auto& st = self->state;
  if (st.leaving)
    return false;
  auto now = steady::now();
  if (!st.socket || now - st.last_endpoint_check >= endpoint_check_interval) {
    st.last_endpoint_check = now;
    check_endpoint(self);
  }
  if (st.socket) {
    if (!st.welcomed && now - st.last_hello >= hello_interval) {
      send_now(self, wire::message_type::hello, make_hello(st));
      st.last_hello = now;
    }
    // A server that encrypts its wire gives a peer with no key, or the wrong one, no answer at
    // all: say what to check, once per connection.
    if (!st.welcomed && !st.hinted && now - st.connected_at >= silence_hint_after) {
      st.hinted = true;
      spdlog::warn("agent '{}': no answer from {} after {} s: is a cdui server listening there? One "
                   "that listens beyond loopback encrypts its wire, and a peer without its public "
                   "key (--server-key, in the enrollment command) or with another key is not heard",
                   st.setup.name, st.contact.endpoint, silence_hint_after.count());
    }
    if (st.welcomed && now - st.last_heartbeat >= st.heartbeat_every) {
      measure_device_memory(st.setup.offers);
      heartbeat h{st.setup.offers, runs_held(st)};
      send_now(self, wire::message_type::heartbeat, h);
      st.last_heartbeat = now;
    }
  }
  if (st.setup.one_shot && st.had_run && st.runs.empty()) {
    spdlog::info("agent '{}': one-shot, its run has ended", st.setup.name);
    leave(self, "a one-shot agent whose run has ended");
    return false;
  }
  return true;
}

/// A supervisor died: its process is stopped and the run fails with the reason. The first time a
/// new supervisor takes the run over from its folder and reports it (its events, then the
/// failure, until acknowledged); after that the agent reports the failure once and gives it up.
void supervisor_failed(self_ptr self, const std::string& id, const caf::error& reason) {
  auto& st = self->state;
  auto& r = st.runs[id];
  auto why = self->system().render(reason);
  // Its process, and under DDP every other rank: none outlives the run.
  bool stopped = stop_run_processes(r.dir);
  run_outcome failure{run_status::failed,
                      "worker '" + st.setup.name + "': the run's supervisor failed (" + why + ")"
                        + (stopped ? ", so its process was stopped" : ""),
                      "{}"};
  spdlog::error("agent '{}': the supervisor of run {} failed ({}){}", st.setup.name, id, why,
                stopped ? "; its process is stopped and the run fails" : "");
  if (stopped || !read_outcome(r.dir)) {
    nlohmann::json outcome{{"status", "failed"}, {"error", failure.error}, {"final_metrics", nlohmann::json::object()}};
    try {
      storage::write_file_atomic(r.dir / "outcome.json", json_text(outcome) + "\n");
    } catch (const std::exception& e) {
      spdlog::warn("agent '{}': cannot write run {}'s outcome: {}", st.setup.name, id, e.what());
    }
  }
  if (++r.failures < max_supervisor_failures) {
    auto failures = r.failures;
    supervise(self, id, std::nullopt, true);
    st.runs[id].failures = failures;
    return;
  }
  send_to_server(current_link(st), wire::message_type::run_done,
                 run_done{id, read_outcome(r.dir).value_or(failure), 0});
  std::error_code ec;
  if (std::filesystem::exists(r.dir, ec))
    storage::write_file_atomic(r.dir / "acked", "");
  st.runs.erase(id);
}

/// The run `id`'s supervisor, if the agent holds the run.
run_supervisor_actor supervisor_of(const agent_state& st, const std::string& id) {
  auto i = st.runs.find(id);
  return i == st.runs.end() ? run_supervisor_actor{} : i->second.supervisor;
}

} // namespace

agent_actor::behavior_type agent_connection(self_ptr self, agent_setup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  st.own_keys = make_curve_keys();
  st.heartbeat_every = std::chrono::milliseconds(10'000);  // until the welcome says another
  self->set_down_handler([self](caf::down_msg& down) {
    auto& runs = self->state.runs;
    auto i = std::find_if(runs.begin(), runs.end(),
                          [&](const auto& r) { return r.second.supervisor.address() == down.source; });
    if (i == runs.end())
      return;
    if (!down.reason || down.reason == caf::exit_reason::normal)
      runs.erase(i);  // acknowledged or forgotten
    else
      supervisor_failed(self, i->first, down.reason);
    launch_held(self);
  });
  recover_runs(self);
  self->send(self, atoms::tick::value);
  // Is this message from the current connection? A replaced one's last messages are dropped.
  auto current = [self](std::uint64_t connection) { return connection == self->state.connection; };
  return guarded_typed_behavior<agent_actor>(
    "agent",
    [=](atoms::tick) {
      if (tick(self))
        self->delayed_send(self, tick_interval, atoms::tick::value);
    },
    [=](atoms::wire_in, std::uint64_t connection, const welcome& w) {
      if (!current(connection))
        return;
      auto& st = self->state;
      st.welcomed = true;
      st.heartbeat_every = std::chrono::milliseconds(std::max(min_heartbeat_ms, w.heartbeat_interval_ms));
      st.last_heartbeat = steady::now();
      spdlog::info("agent '{}': joined the server at {} (cdui {}), heartbeat every {} ms",
                   st.setup.name, st.contact.endpoint, w.server_version, st.heartbeat_every.count());
      relink(self);
      if (st.setup.on_joined)
        st.setup.on_joined();
      for (const auto& rc : w.resume)
        if (auto sup = supervisor_of(st, rc.run_id))
          self->send(sup, agent_atoms::resend::value, rc.cursor);
      for (const auto& id : w.forget) {
        if (auto sup = supervisor_of(st, id)) {
          st.runs.at(id).forgotten = true;
          self->send(sup, agent_atoms::forget::value);
        } else if (auto i = held(st, id); i != st.held.end()) {
          st.held.erase(i);  // ended by the server while it waited here: it never starts
        }
      }
    },
    [=](atoms::wire_in, std::uint64_t connection, const assign_run& a) {
      auto& st = self->state;
      if (!current(connection) || a.devices.empty())
        return;
      if (st.runs.count(a.run_id) || held(st, a.run_id) != st.held.end()) {
        spdlog::warn("agent '{}': run {} was assigned again; it already holds it", st.setup.name,
                     a.run_id);
        return;
      }
      if (stopping_forgotten(st, a))
        spdlog::info("agent '{}': run {} starts once the runs the server forgot have stopped", st.setup.name,
                     a.run_id);
      launch_or_hold(self, a);
    },
    [=](atoms::wire_in, std::uint64_t connection, const run_cursor& rc) {
      if (auto sup = supervisor_of(self->state, rc.run_id); sup && current(connection))
        self->send(sup, agent_atoms::resend::value, rc.cursor);
    },
    [=](atoms::wire_in, std::uint64_t connection, const run_ack& ack) {
      if (auto sup = supervisor_of(self->state, ack.run_id); sup && current(connection))
        self->send(sup, agent_atoms::ack::value);
    },
    [=](atoms::wire_in, std::uint64_t connection, const outputs_request& q) {
      if (current(connection))
        send_now(self, wire::message_type::outputs_reply, outputs_of(self->state, q.run_id));
    },
    [=](atoms::wire_in, std::uint64_t connection, const stop_run& s) {
      auto& st = self->state;
      if (!current(connection))
        return;
      if (auto sup = supervisor_of(st, s.run_id)) {
        self->send(sup, atoms::stop::value, s.interrupt);
      } else if (auto i = held(st, s.run_id); i != st.held.end()) {
        st.held.erase(i);  // stopped before it started
        send_now(self, wire::message_type::run_done,
                 run_done{s.run_id, {s.interrupt ? run_status::interrupted : run_status::cancelled, "", "{}"}, 0});
      }
    },
    [=](atoms::wire_in, std::uint64_t connection, const refused& r) {
      auto& st = self->state;
      if (!current(connection))
        return;
      if (r.retry) {
        spdlog::info("agent '{}': {}", st.setup.name, r.reason);
        st.welcomed = false;
        st.last_hello = {};
        relink(self);
        return;
      }
      spdlog::error("agent '{}': the server refused it: {}", st.setup.name, r.reason);
      // Refused at its hello (removed while away, say): no server follows the runs it still has,
      // so they stop. A connection refused later (a newer agent took the name) leaves them to
      // that agent.
      if (!st.welcomed)
        for (const auto& [id, run] : st.runs)
          if (run.executing) {
            spdlog::warn("agent '{}': run {} stops, since no server follows it", st.setup.name, id);
            self->send(run.supervisor, atoms::stop::value, true);
          }
      end(self, r.reason, true);
    },
    [=](agent_atoms::started, const std::string&) { self->state.had_run = true; },
    [=](atoms::ended, const std::string& id) {
      if (auto i = self->state.runs.find(id); i != self->state.runs.end())
        i->second.executing = false;
    },
    [=](atoms::wire_in, std::uint64_t connection, const goodbye&) {
      if (current(connection) && self->state.leaving)
        end(self, "", false);
    },
    [=](atoms::deadline) {
      spdlog::warn("agent '{}': the server did not answer its goodbye within {} s; it stops anyway",
                   self->state.setup.name, goodbye_deadline.count());
      end(self, "", false);
    },
    [=](agent_atoms::supervisor, const std::string& id) { return supervisor_of(self->state, id); },
    [=](atoms::stop) { leave(self, ""); });
}

} // namespace cdui::actors
