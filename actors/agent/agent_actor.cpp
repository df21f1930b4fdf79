#include "actors/agent/agent_actor.hpp"

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

using self_ptr = agent_actor::stateful_pointer<agent_state>;
using steady = std::chrono::steady_clock;

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

/// The server on `home`, if one runs there.
std::optional<server_contact> server_on(const std::filesystem::path& home) {
  if (!storage::home_lock::server_running(home))
    return std::nullopt;
  auto address = storage::read_server_json(home);
  if (!address || address->zmq.empty())
    return std::nullopt;
  return server_contact{address->zmq, address->zmq_public_key};
}

std::filesystem::path runs_dir(const agent_state& st) {
  return st.setup.home / "agents" / st.setup.name / "runs";
}

wire_link current_link(const agent_state& st) {
  return st.welcomed ? wire_link{st.socket} : wire_link{};
}

/// Tells every supervisor where to report now (nowhere, when not welcomed).
void relink(self_ptr self) {
  for (const auto& [id, r] : self->state.runs)
    self->send(r.supervisor, agent_atoms::link::value, current_link(self->state));
}

template <class T>
void send_now(self_ptr self, wire::message_type type, const T& payload) {
  send_to_server(wire_link{self->state.socket}, type, payload);
}

/// Each offer's memory now: the host's RAM for the CPU (the first offer); for a card, what it has
/// free counting every process on it, another user's job included (a sim card's shared memory, a
/// CUDA card's driver figure).
void measure_device_memory(std::vector<device_offer>& offers) {
  offers.front() = this_host_cpu_offer();
  for (auto& offer : offers)
    if (offer.kind != "cpu")
      offer.free_bytes = devices::card_free_bytes(offer.kind, offer.uuid, offer.total_bytes);
}

hello make_hello(agent_state& st) {
  hello h;
  h.name = st.setup.name;
  h.version = version();
  h.env_digest = fnv1a_hex(st.setup.environment);
  h.node_types_digest = runtime::node_types_digest();
  measure_device_memory(st.setup.offers);
  h.devices = st.setup.offers;
  // Read at each hello: a re-keyed credential's file can be replaced while the agent runs.
  h.credential = (st.setup.credential_file.empty() ? storage::read_token(st.setup.home)
                                                   : storage::read_first_line(st.setup.credential_file))
                   .value_or("");
  for (const auto& [id, r] : st.runs)
    h.running_runs.push_back(id);
  h.one_shot = st.setup.one_shot;
  return h;
}

/// The outputs a record_outputs run left in its folder, for the server.
outputs_reply outputs_of(const agent_state& st, const std::string& run_id) {
  outputs_reply r{run_id, false, "", "", false};
  const auto& worker = st.setup.name;
  // A run id names a folder here: nothing that could leave runs_dir().
  if (run_id.empty() || run_id.size() > 64
      || run_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
           != std::string::npos) {
    r.error = "'" + run_id + "' is not a run id";
    return r;
  }
  auto dir = runs_dir(st) / run_id;
  auto held = st.runs.find(run_id);
  if (held != st.runs.end() && held->second.executing) {
    r.error = "run " + run_id + " is running on worker '" + worker
              + "'; its outputs are recorded when it ends";
    return r;
  }
  if (!std::filesystem::exists(dir)) {
    r.error = "worker '" + worker + "' no longer has run " + run_id + " (its folder " + dir.string()
              + " is gone)";
    return r;
  }
  auto file = dir / "outputs.json";
  std::error_code ec;
  auto size = std::filesystem::file_size(file, ec);
  if (ec) {
    r.error = "run " + run_id + " left no recorded outputs on worker '" + worker + "'";
    return r;
  }
  if (size + 4096 > wire::max_frame_bytes) {
    r.error = "run " + run_id + "'s recorded outputs (" + std::to_string(size) + " bytes, in "
              + file.string() + " on worker '" + worker + "') are too large to send";
    return r;
  }
  std::ifstream in{file, std::ios::binary};
  r.nodes_json.assign(std::istreambuf_iterator<char>{in}, {});
  r.found = true;
  return r;
}

/// Spawns and monitors the supervisor of a run: a new one (`launch`), or one taken over from its
/// folder.
void supervise(self_ptr self, const std::string& id, std::optional<run_launch> launch,
               bool after_failure = false) {
  auto& st = self->state;
  supervisor_setup s{id,
                     st.setup.name,
                     runs_dir(st) / id,
                     std::move(launch),
                     st.setup.exec_binary,
                     current_link(st),
                     caf::actor_cast<agent_actor>(self),
                     after_failure};
  auto& r = st.runs[id];
  r.dir = s.dir;
  r.executing = true;
  r.supervisor = self->spawn<caf::monitored>(run_supervisor, std::move(s));
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

/// Connects to `contact` on a new socket, dropping the old one.
void connect(self_ptr self, const server_contact& contact) {
  auto& st = self->state;
  zmq_socket_setup s;
  s.type = zmq_socket_setup::role::dealer;
  s.name = "agent '" + st.setup.name + "'";
  s.connect = contact.endpoint;
  // Nothing queues for a server that is not there: a hello is sent again when it is.
  s.immediate = true;
  if (!contact.public_key.empty()) {
    s.curve_server_key = contact.public_key;
    s.curve_public_key = st.own_keys.public_key;
    s.curve_secret_key = st.own_keys.secret_key;
  }
  std::shared_ptr<zmq_socket_thread> socket;
  try {
    socket = std::make_shared<zmq_socket_thread>(s);
  } catch (const std::exception& e) {
    spdlog::warn("agent '{}': cannot connect to {}: {}", st.setup.name, contact.endpoint, e.what());
    return;
  }
  st.welcomed = false;
  relink(self);
  st.socket = std::move(socket);
  auto connection = ++st.connection;
  auto me = caf::actor_cast<agent_actor>(self);
  // On the socket's thread: each message the server sends becomes (wire_in, connection, struct);
  // what does not decode is ignored.
  st.socket->start([me, connection](const zmq_socket_thread::frames& parts) {
    if (parts.size() != 2)
      return;
    auto envelope = wire::decode_envelope(parts[0]);
    if (!std::holds_alternative<wire::envelope>(envelope))
      return;
    auto forward = [&](auto decoded) {
      if (decoded)
        caf::anon_send(me, atoms::wire_in::value, connection, std::move(*decoded));
    };
    switch (std::get<wire::envelope>(envelope).type) {
    case wire::message_type::welcome: forward(wire::decode<welcome>(parts[1])); break;
    case wire::message_type::assign_run: forward(wire::decode<assign_run>(parts[1])); break;
    case wire::message_type::resend: forward(wire::decode<run_cursor>(parts[1])); break;
    case wire::message_type::run_ack: forward(wire::decode<run_ack>(parts[1])); break;
    case wire::message_type::outputs_request: forward(wire::decode<outputs_request>(parts[1])); break;
    case wire::message_type::stop_run: forward(wire::decode<stop_run>(parts[1])); break;
    case wire::message_type::refused: forward(wire::decode<refused>(parts[1])); break;
    case wire::message_type::goodbye: forward(wire::decode<goodbye>(parts[1])); break;
    default: break;
    }
  });
  auto now = steady::now();
  st.contact = contact;
  st.last_hello = {};
  st.connected_at = now;
  st.hinted = false;
  spdlog::info("agent '{}': connecting to {}{}", st.setup.name, contact.endpoint,
               contact.public_key.empty() ? "" : " (CURVE)");
}

/// Finds the server (server.json or --server) and connects again when it has moved.
void check_endpoint(self_ptr self) {
  auto& st = self->state;
  auto contact = st.setup.server.empty() ? server_on(st.setup.home)
                                         : std::optional<server_contact>{{st.setup.server, ""}};
  if (contact && !st.setup.server_key.empty())
    contact->public_key = st.setup.server_key;
  if (contact && (!st.socket || *contact != st.contact))
    connect(self, *contact);
}

/// The agent's end: its supervisors quit (their processes run on), the owner hears why.
void end(self_ptr self, const std::string& reason, bool was_refused) {
  auto& st = self->state;
  for (const auto& [id, r] : st.runs)
    self->send(r.supervisor, atoms::quit::value);
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
  send_now(self, wire::message_type::goodbye, goodbye{why});
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
      heartbeat h{st.setup.offers, {}};
      for (const auto& [id, r] : st.runs)
        h.running_runs.push_back(id);
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
  bool stopped = false;
  for (int k = 0;; ++k) {
    auto file = k == 0 ? std::string{"exec.pid"} : ddp_rank_pid_file(k);
    if (k > 0 && !std::filesystem::exists(r.dir / file))
      break;
    if (stop_run_process(run_process_pid(r.dir, file), r.dir))
      stopped = stopped || k == 0;
  }
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

std::string this_host_name() {
  auto name = devices::host_name();
  return name.empty() ? "worker" : name;
}

device_offer this_host_cpu_offer() {
  struct sysinfo info {};
  ::sysinfo(&info);
  auto unit = static_cast<std::int64_t>(info.mem_unit);
  return {"cpu", "cpu", "cpu-" + this_host_name(), static_cast<std::int64_t>(info.totalram) * unit,
          static_cast<std::int64_t>(info.freeram + info.bufferram) * unit};
}

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
      for (const auto& id : w.forget)
        if (auto sup = supervisor_of(st, id))
          self->send(sup, agent_atoms::forget::value);
    },
    [=](atoms::wire_in, std::uint64_t connection, const assign_run& a) {
      auto& st = self->state;
      if (!current(connection) || a.devices.empty())
        return;
      if (st.runs.count(a.run_id)) {
        spdlog::warn("agent '{}': run {} was assigned again; it already holds it", st.setup.name,
                     a.run_id);
        return;
      }
      auto plan = policy::plan_launch(a.devices, st.setup.offers);
      if (auto* why = std::get_if<std::string>(&plan)) {
        send_now(self, wire::message_type::run_done,
                 run_done{a.run_id, {run_status::failed, "worker '" + st.setup.name + "': " + *why, "{}"}, 0});
        return;
      }
      supervise(self, a.run_id, run_launch{a, std::get<policy::launch_plan>(std::move(plan))});
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
      if (auto sup = supervisor_of(self->state, s.run_id); sup && current(connection))
        self->send(sup, atoms::stop::value, s.interrupt);
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
