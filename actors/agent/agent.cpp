#include "actors/agent/agent.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <csignal>
#include <fstream>

#include <fcntl.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "actors/common/run_process.hpp"
#include "actors/policy/worker_table.hpp"
#include "actors/common/curve_keys.hpp"
#include "devices/device.hpp"
#include "devices/host_inventory.hpp"
#include "messages/digest.hpp"
#include "messages/json_text.hpp"
#include "messages/version.hpp"
#include "messages/wire.hpp"
#include "runtime/node_keys.hpp"
#include "storage/credentials.hpp"
#include "storage/home.hpp"
#include "storage/run_directory.hpp"
#include "storage/server_files.hpp"

namespace cdui {

namespace {

using steady = std::chrono::steady_clock;

/// How often an agent that has no welcome says hello again (a hello sent while the connection is
/// still being made is dropped), and how often it re-reads server.json.
constexpr auto hello_interval = std::chrono::milliseconds(250);
constexpr auto endpoint_check_interval = std::chrono::seconds(2);
/// How long an agent hears nothing from a server before it says what to check.
constexpr auto silence_hint_after = std::chrono::seconds(20);
/// The heartbeat interval until the server's welcome says another one (seed 001: every 10 s).
constexpr auto default_heartbeat = std::chrono::seconds(10);

std::string hostname() {
  auto name = devices::host_name();
  return name.empty() ? "worker" : name;
}

device_offer cpu_offer() {
  struct sysinfo info {};
  ::sysinfo(&info);
  auto unit = static_cast<std::int64_t>(info.mem_unit);
  return {"cpu", "cpu", "cpu-" + hostname(), static_cast<std::int64_t>(info.totalram) * unit,
          static_cast<std::int64_t>(info.freeram + info.bufferram) * unit};
}

/// Where the agent connects: the endpoint and, for an encrypted wire, the server's public key.
struct server_contact {
  std::string endpoint;
  std::string public_key;
  bool operator!=(const server_contact& o) const {
    return endpoint != o.endpoint || public_key != o.public_key;
  }
};

/// The server on `home`, if one runs there.
std::optional<server_contact> server_on(const std::filesystem::path& home) {
  if (!storage::home_lock::server_running(home))
    return std::nullopt;
  auto address = storage::read_server_json(home);
  if (!address || address->zmq.empty())
    return std::nullopt;
  return server_contact{address->zmq, address->zmq_public_key};
}

/// Whether `endpoint` is tcp://HOST:PORT with a port from 1 to 65535.
bool is_tcp_endpoint(const std::string& endpoint) {
  auto colon = endpoint.rfind(':');
  if (endpoint.rfind("tcp://", 0) != 0 || colon == std::string::npos || colon <= 6)
    return false;
  auto port = endpoint.substr(colon + 1);
  return !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos
         && std::stoi(port) >= 1 && std::stoi(port) <= 65535;
}

template <class T>
/// False when the message could not be queued (the connection is down, or its queue is full):
/// the caller keeps what it sent for the next try.
bool send(zmq::socket_t& socket, wire::message_type type, const T& payload) {
  auto head = wire::encode_envelope({wire::protocol_version, type, 0, ""});
  auto body = wire::encode(payload);
  std::array<zmq::const_buffer, 2> frames{zmq::buffer(head), zmq::buffer(body)};
  try {
    return zmq::send_multipart(socket, frames, zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    return false;
  }
}

/// The most events one run_update carries, so that a replay is many messages, not one huge one.
constexpr std::size_t max_events_per_update = 500;


/// Whether the `cdui exec` of the run folder `dir` is still running as `pid` (it may be an earlier
/// agent's child, which waitpid cannot watch).
bool process_alive(int pid, const std::filesystem::path& dir) {
  if (pid <= 0 || ::kill(pid, 0) != 0)
    return false;
  std::ifstream in{"/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary};
  std::string cmdline{std::istreambuf_iterator<char>{in}, {}};
  return cmdline.find(std::string{"exec"} + '\0' + dir.string()) != std::string::npos;
}


} // namespace

std::string agent::default_name() {
  return hostname();
}

agent::agent(config cfg) : cfg_(std::move(cfg)) {
  if (cfg_.home.empty())
    cfg_.home = storage::default_home();
  if (cfg_.name.empty())
    cfg_.name = hostname();
  if (!policy::is_valid_worker_name(cfg_.name))
    throw std::invalid_argument("--name: '" + cfg_.name + "' is not a worker name ("
                                + policy::worker_name_rule + ")");
  auto inventory = cfg_.sim_devices.empty() ? devices::host_inventory::probe()
                                            : devices::host_inventory::probe(cfg_.sim_devices);
  environment_ = inventory.environment();
  for (const auto& wanted : cfg_.devices) {
    if (wanted == "cpu")
      continue;
    if (std::none_of(inventory.devices().begin(), inventory.devices().end(),
                     [&](const auto& d) { return d.name == wanted; })) {
      std::string offered;
      for (const auto& d : inventory.devices())
        offered += (offered.empty() ? "" : ", ") + d.name;
      throw std::invalid_argument("--devices: this machine has no " + wanted + " (it has "
                                  + offered + ")");
    }
  }
  if (!cfg_.server.empty() && !is_tcp_endpoint(cfg_.server))
    throw std::invalid_argument("--server: '" + cfg_.server + "' is not tcp://HOST:PORT");
  if (!cfg_.server_key.empty() && !actors::is_curve_key(cfg_.server_key))
    throw std::invalid_argument("--server-key: not a CURVE public key (40 Z85 characters, as the "
                                "enrollment command gives it)");
  if (!cfg_.credential_file.empty()) {
    cfg_.credential_file = std::filesystem::absolute(cfg_.credential_file);
    if (!storage::read_first_line(cfg_.credential_file))
      throw std::invalid_argument("--credential: cannot read a credential from "
                                  + cfg_.credential_file.string());
    auto perms = std::filesystem::status(cfg_.credential_file).permissions();
    using p = std::filesystem::perms;
    if ((perms & (p::group_all | p::others_all)) != p::none)
      spdlog::warn("agent '{}': {} can be read by other users; chmod 600 it", cfg_.name,
                   cfg_.credential_file.string());
  }
  offers_.push_back(cpu_offer());  // the CPU is always offered (seed 001)
  for (const auto& d : inventory.devices()) {
    if (d.name == "cpu")
      continue;
    if (!cfg_.devices.empty()
        && std::find(cfg_.devices.begin(), cfg_.devices.end(), d.name) == cfg_.devices.end())
      continue;
    offers_.push_back({d.name, devices::kind_of(d.name), d.uuid, d.total_bytes, d.total_bytes});
  }
}

std::vector<std::string> agent::running_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, r] : runs_)
    ids.push_back(id);
  return ids;
}

std::optional<std::string> agent::start_run(const assign_run& a) {
  // The run's cards, renumbered from 0 per kind in the order given: its sim:0 is the first sim
  // card it was given, whatever the worker calls it (seed 001, "In-run device names").
  std::map<std::string, int> next_index;
  std::vector<std::string> visible;
  nlohmann::json aliases = nlohmann::json::object();
  std::string sim_sizes;
  std::string cuda_indexes;
  for (const auto& name : a.devices) {
    auto offer = std::find_if(offers_.begin(), offers_.end(),
                              [&](const auto& o) { return o.name == name; });
    if (offer == offers_.end())
      return "this worker does not offer " + name;
    auto kind = devices::kind_of(name);
    auto in_run = kind == "cpu" ? std::string{"cpu"} : kind + ":" + std::to_string(next_index[kind]++);
    visible.push_back(in_run);
    aliases[in_run] = name;
    if (kind == "sim")
      sim_sizes += (sim_sizes.empty() ? "" : ",") + std::to_string(offer->total_bytes);
    else if (kind == "cuda")
      cuda_indexes += (cuda_indexes.empty() ? "" : ",") + name.substr(name.find(':') + 1);
  }
  std::filesystem::path dir;
  try {
    storage::run_directory folder{runs_dir().parent_path(), a.run_id, a.graph_json};
    dir = folder.path();
    nlohmann::json run{{"run_id", a.run_id},
                       {"name", a.name},
                       {"worker", cfg_.name},
                       {"seed", a.seed},
                       {"device", visible.front()},
                       {"visible_devices", visible},
                       {"device_aliases", aliases},
                       {"options", nlohmann::json::parse(a.options_json, nullptr, false)}};
    storage::write_file_atomic(dir / "run.json", json_text(run, 2) + "\n");
  } catch (const std::exception& e) {
    return std::string{"cannot prepare the run's folder on the worker: "} + e.what();
  }
  // A stop can come as soon as the new process has a pid: start_exec keeps it waiting until
  // `cdui exec` installs its handlers. Its own session: the run outlives a signal to the agent's
  // process group.
  pid_t pid = actors::start_exec("/proc/self/exe", dir, false, -1,
                         {{"CODEFYUI_SIM_DEVICES", sim_sizes}, {"CUDA_VISIBLE_DEVICES", cuda_indexes}});
  if (pid < 0)
    return "cannot start the run's process (fork failed)";
  // An agent that restarts finds the process again by it (the run outlives the agent).
  storage::write_file_atomic(dir / "exec.pid", std::to_string(pid) + "\n");
  running_run r;
  r.pid = pid;
  r.dir = dir;
  runs_[a.run_id] = r;
  had_run_ = true;
  spdlog::info("agent '{}': run {} started (pid {}) on {}", cfg_.name, a.run_id, pid,
               a.devices.front());
  return std::nullopt;
}

std::vector<run_event> agent::new_events(running_run& r) {
  std::vector<run_event> events;
  std::ifstream in{r.dir / "events.jsonl", std::ios::binary};
  if (!in)
    return events;
  in.seekg(static_cast<std::streamoff>(r.sent_bytes));
  std::string line;
  // Only whole lines: the last one may still be being written.
  while (events.size() < max_events_per_update && std::getline(in, line) && !in.eof()) {
    r.sent_bytes += line.size() + 1;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j["type"].is_string())
      continue;
    auto cursor = j.value("cursor", std::uint64_t{0});
    if (cursor <= r.sent_cursor)
      continue;  // the server has it (after a rewind to its cursor)
    r.sent_cursor = cursor;
    events.push_back({cursor, j.value("time_ms", std::int64_t{0}), j["type"].get<std::string>(),
                      json_text(j["data"])});
  }
  return events;
}

outputs_reply agent::outputs_of(const std::string& run_id) const {
  outputs_reply r{run_id, false, "", "", false};
  // A run id names a folder here: nothing that could leave runs_dir().
  if (run_id.empty() || run_id.size() > 64
      || run_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
           != std::string::npos) {
    r.error = "'" + run_id + "' is not a run id";
    return r;
  }
  auto dir = runs_dir() / run_id;
  auto running = runs_.find(run_id);
  if (running != runs_.end() && !running->second.ended) {
    r.error = "run " + run_id + " is running on worker '" + cfg_.name
              + "'; its outputs are recorded when it ends";
    return r;
  }
  if (!std::filesystem::exists(dir)) {
    r.error = "worker '" + cfg_.name + "' no longer has run " + run_id + " (its folder " + dir.string()
              + " is gone)";
    return r;
  }
  auto file = dir / "outputs.json";
  std::error_code ec;
  auto size = std::filesystem::file_size(file, ec);
  if (ec) {
    r.error = "run " + run_id + " left no recorded outputs on worker '" + cfg_.name + "'";
    return r;
  }
  if (size + 4096 > wire::max_frame_bytes) {
    r.error = "run " + run_id + "'s recorded outputs (" + std::to_string(size) + " bytes, in "
              + file.string() + " on worker '" + cfg_.name + "') are too large to send";
    return r;
  }
  std::ifstream in{file, std::ios::binary};
  r.nodes_json.assign(std::istreambuf_iterator<char>{in}, {});
  r.found = true;
  return r;
}

std::filesystem::path agent::runs_dir() const {
  return cfg_.home / "agents" / cfg_.name / "runs";
}

void agent::recover_runs() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator{runs_dir(), ec}) {
    const auto& dir = entry.path();
    if (!std::filesystem::exists(dir / "run.json") || std::filesystem::exists(dir / "acked"))
      continue;
    running_run r;
    r.dir = dir;
    r.child = false;
    std::ifstream pid_file{dir / "exec.pid"};
    pid_file >> r.pid;
    if (!process_alive(r.pid, dir)) {
      r.pid = -1;
      r.ended = actors::read_outcome(dir).value_or(run_outcome{
        run_status::failed, "the run's process ended while its agent was not running, without an outcome",
        "{}"});
    }
    spdlog::info("agent '{}': found run {} from an earlier agent ({})", cfg_.name,
                 dir.filename().string(), r.ended ? "ended" : "still executing");
    runs_[dir.filename().string()] = r;
    had_run_ = true;  // a one-shot agent restarted mid-run still exits when that run is done
  }
}

void agent::resend_from(const run_cursor& rc) {
  auto i = runs_.find(rc.run_id);
  if (i == runs_.end())
    return;
  auto& r = i->second;
  if (rc.cursor < r.sent_cursor) {
    // Some of what was sent never arrived (the connection was down): from its cursor, again.
    r.sent_bytes = 0;
    r.sent_cursor = rc.cursor;
  }
  r.end_sent = false;  // the next pump sends what is missing, then the end
}

void agent::on_welcome(const welcome& w) {
  for (const auto& rc : w.resume)
    resend_from(rc);
  for (const auto& id : w.forget) {
    auto i = runs_.find(id);
    if (i == runs_.end())
      continue;
    if (i->second.ended) {  // its end was recorded; only the acknowledgement was lost
      on_ack(id);
      continue;
    }
    spdlog::info("agent '{}': the server no longer follows run {}; stopping it", cfg_.name, id);
    i->second.forgotten = true;
    if (i->second.pid > 0)
      ::kill(i->second.pid, SIGTERM);
  }
}

void agent::on_ack(const std::string& run_id) {
  auto i = runs_.find(run_id);
  if (i == runs_.end())
    return;
  storage::write_file_atomic(i->second.dir / "acked", "");
  runs_.erase(i);
}

void agent::pump_runs(zmq::socket_t& socket) {
  for (auto i = runs_.begin(); i != runs_.end();) {
    auto& [id, r] = *i;
    int status = 0;
    bool exited = false;
    if (!r.ended)
      exited = r.child ? ::waitpid(r.pid, &status, WNOHANG) == r.pid : !process_alive(r.pid, r.dir);
    // Read after the exit check: once it has exited, everything it wrote is in the file. What
    // could not be sent is read again next time, so nothing is skipped.
    auto sent_bytes = r.sent_bytes;
    auto sent_cursor = r.sent_cursor;
    auto events = new_events(r);
    bool caught_up = true;
    if (!events.empty() && !r.forgotten) {
      caught_up = events.size() < max_events_per_update;
      if (!send(socket, wire::message_type::run_update, run_update{id, std::move(events)})) {
        r.sent_bytes = sent_bytes;
        r.sent_cursor = sent_cursor;
        caught_up = false;
      }
    }
    if (exited && r.forgotten) {
      storage::write_file_atomic(r.dir / "acked", "");
      i = runs_.erase(i);
      continue;
    }
    if (exited) {
      r.ended = actors::read_outcome(r.dir).value_or(run_outcome{
        run_status::failed,
        r.child ? actors::process_exit_reason(status)
                : "the run's process ended without an outcome while its agent was restarting",
        "{}"});
      spdlog::info("agent '{}': run {} ended {}{}{}", cfg_.name, id, to_string(r.ended->status),
                   r.ended->error.empty() ? "" : ": ", r.ended->error);
    }
    // The end goes after the last event, and again after a reconnect until it is acknowledged.
    if (r.ended && caught_up && !r.end_sent && !r.forgotten)
      r.end_sent = send(socket, wire::message_type::run_done, run_done{id, *r.ended, r.sent_cursor});
    ++i;
  }
}

void agent::stop_run_process(const stop_run& s) {
  auto i = runs_.find(s.run_id);
  if (i == runs_.end() || i->second.ended)
    return;
  spdlog::info("agent '{}': {} run {}", cfg_.name, s.interrupt ? "interrupting" : "cancelling",
               s.run_id);
  ::kill(i->second.pid, s.interrupt ? SIGUSR1 : SIGTERM);
}

hello agent::make_hello() const {
  hello h;
  h.name = cfg_.name;
  h.version = version();
  h.env_digest = fnv1a_hex(environment_);
  h.node_types_digest = runtime::node_types_digest();
  h.devices = offers_;
  // Read at each hello: a re-keyed credential's file can be replaced while the agent runs.
  h.credential = (cfg_.credential_file.empty() ? storage::read_token(cfg_.home)
                                               : storage::read_first_line(cfg_.credential_file))
                   .value_or("");
  h.running_runs = running_ids();
  h.one_shot = cfg_.one_shot;
  return h;
}

std::optional<std::string> agent::run() {
  recover_runs();
  zmq::context_t context{1};
  std::optional<zmq::socket_t> socket;
  server_contact connected_to;
  // This process's own CURVE keys, for a server that encrypts its wire.
  auto own_keys = actors::make_curve_keys();
  auto connected_at = steady::now();
  bool hinted = false;
  bool welcomed = false;
  auto heartbeat_every = std::chrono::duration_cast<std::chrono::milliseconds>(default_heartbeat);
  auto last_hello = steady::time_point{};
  auto last_heartbeat = steady::time_point{};
  auto last_endpoint_check = steady::time_point{};

  while (!stop_) {
    auto now = steady::now();
    if (now - last_endpoint_check >= endpoint_check_interval || !socket) {
      last_endpoint_check = now;
      auto contact = cfg_.server.empty() ? server_on(cfg_.home)
                                         : std::optional<server_contact>{{cfg_.server, ""}};
      if (contact && !cfg_.server_key.empty())
        contact->public_key = cfg_.server_key;
      if (contact && (!socket || *contact != connected_to)) {
        socket.emplace(context, zmq::socket_type::dealer);
        socket->set(zmq::sockopt::linger, 0);
        // Nothing queues for a server that is not there: a hello is sent again when it is.
        socket->set(zmq::sockopt::immediate, 1);
        if (!contact->public_key.empty()) {
          socket->set(zmq::sockopt::curve_serverkey, contact->public_key);
          socket->set(zmq::sockopt::curve_publickey, own_keys.public_key);
          socket->set(zmq::sockopt::curve_secretkey, own_keys.secret_key);
        }
        socket->connect(contact->endpoint);
        connected_to = *contact;
        welcomed = false;
        last_hello = {};
        connected_at = now;
        hinted = false;
        spdlog::info("agent '{}': connecting to {}{}", cfg_.name, connected_to.endpoint,
                     connected_to.public_key.empty() ? "" : " (CURVE)");
      }
    }
    if (!socket) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (!welcomed && now - last_hello >= hello_interval) {
      send(*socket, wire::message_type::hello, make_hello());
      last_hello = now;
    }
    // A server that encrypts its wire gives a peer with no key, or the wrong one, no answer at
    // all: say what to check, once per connection.
    if (!welcomed && !hinted && now - connected_at >= silence_hint_after) {
      hinted = true;
      spdlog::warn("agent '{}': no answer from {} after {} s: is a cdui server listening there? One "
                   "that listens beyond loopback encrypts its wire, and a peer without its public "
                   "key (--server-key, in the enrollment command) or with another key is not heard",
                   cfg_.name, connected_to.endpoint, silence_hint_after.count());
    }
    if (welcomed && now - last_heartbeat >= heartbeat_every) {
      offers_.front() = cpu_offer();  // the host's memory now; a sim card reports its size
      send(*socket, wire::message_type::heartbeat, heartbeat{offers_, running_ids()});
      last_heartbeat = now;
    }
    // Reports go to a server that has welcomed this connection, which knows where each run is.
    if (welcomed)
      pump_runs(*socket);
    if (cfg_.one_shot && had_run_ && runs_.empty()) {
      spdlog::info("agent '{}': one-shot, its run has ended", cfg_.name);
      return std::nullopt;
    }
    zmq::pollitem_t items[] = {{socket->handle(), 0, ZMQ_POLLIN, 0}};
    try {
      // While runs execute, their events go out within 20 ms; idle, the loop wakes every 100 ms.
      zmq::poll(items, 1, std::chrono::milliseconds(runs_.empty() ? 100 : 20));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR)
        continue;  // a signal (SIGTERM: stop) arrived; the loop looks at the flag
      throw;
    }
    if (!(items[0].revents & ZMQ_POLLIN))
      continue;
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(*socket, std::back_inserter(parts), zmq::recv_flags::dontwait)
        || parts.size() != 2)
      continue;
    auto envelope = wire::decode_envelope(parts[0].to_string_view());
    if (!std::holds_alternative<wire::envelope>(envelope))
      continue;
    auto type = std::get<wire::envelope>(envelope).type;
    if (type == wire::message_type::welcome) {
      if (auto w = wire::decode<welcome>(parts[1].to_string_view())) {
        welcomed = true;
        heartbeat_every = std::chrono::milliseconds(std::max<std::uint32_t>(50, w->heartbeat_interval_ms));
        last_heartbeat = steady::now();
        spdlog::info("agent '{}': joined the server at {} (cdui {}), heartbeat every {} ms",
                     cfg_.name, connected_to.endpoint, w->server_version, heartbeat_every.count());
        on_welcome(*w);
      }
    } else if (type == wire::message_type::assign_run) {
      auto a = wire::decode<assign_run>(parts[1].to_string_view());
      if (!a || a->devices.empty())
        continue;
      if (auto why = start_run(*a))
        send(*socket, wire::message_type::run_done,
             run_done{a->run_id, {run_status::failed, "worker '" + cfg_.name + "': " + *why, "{}"}, 0});
    } else if (type == wire::message_type::resend) {
      if (auto rc = wire::decode<run_cursor>(parts[1].to_string_view()))
        resend_from(*rc);
    } else if (type == wire::message_type::run_ack) {
      if (auto ack = wire::decode<run_ack>(parts[1].to_string_view()))
        on_ack(ack->run_id);
    } else if (type == wire::message_type::outputs_request) {
      if (auto q = wire::decode<outputs_request>(parts[1].to_string_view()))
        send(*socket, wire::message_type::outputs_reply, outputs_of(q->run_id));
    } else if (type == wire::message_type::stop_run) {
      if (auto s = wire::decode<stop_run>(parts[1].to_string_view()))
        stop_run_process(*s);
    } else if (type == wire::message_type::refused) {
      auto r = wire::decode<refused>(parts[1].to_string_view());
      if (!r)
        continue;
      if (!r->retry) {
        spdlog::error("agent '{}': the server refused it: {}", cfg_.name, r->reason);
        // Refused at its hello (removed while away, say): no server follows the runs it still
        // has, so they stop. A connection refused later (a newer agent took the name) leaves
        // them to that agent.
        if (!welcomed)
          for (const auto& [id, run] : runs_)
            if (!run.ended) {
              spdlog::warn("agent '{}': run {} stops, since no server follows it", cfg_.name, id);
              stop_run_process(stop_run{id, true});
            }
        return r->reason;
      }
      spdlog::info("agent '{}': {}", cfg_.name, r->reason);
      welcomed = false;
      last_hello = {};
    }
  }
  return std::nullopt;
}

} // namespace cdui
