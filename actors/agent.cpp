#include "actors/agent.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <sys/sysinfo.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "devices/host_inventory.hpp"
#include "messages/digest.hpp"
#include "messages/version.hpp"
#include "messages/wire.hpp"
#include "runtime/node_keys.hpp"
#include "storage/home.hpp"
#include "storage/server_files.hpp"

namespace cdui {

namespace {

using steady = std::chrono::steady_clock;

/// How often an agent that has no welcome says hello again (a hello sent while the connection is
/// still being made is dropped), and how often it re-reads server.json.
constexpr auto hello_interval = std::chrono::milliseconds(250);
constexpr auto endpoint_check_interval = std::chrono::seconds(2);
/// The heartbeat interval until the server's welcome says another one (seed 001: every 10 s).
constexpr auto default_heartbeat = std::chrono::seconds(10);

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0')
    return "worker";
  return buf;
}

device_offer cpu_offer() {
  struct sysinfo info {};
  ::sysinfo(&info);
  auto unit = static_cast<std::int64_t>(info.mem_unit);
  return {"cpu", "cpu", "cpu-" + hostname(), static_cast<std::int64_t>(info.totalram) * unit,
          static_cast<std::int64_t>(info.freeram + info.bufferram) * unit};
}

std::string kind_of(const std::string& name) {
  return name.substr(0, name.find(':'));
}

/// The endpoint of the server on `home`, if one runs there.
std::optional<std::string> server_endpoint(const std::filesystem::path& home) {
  if (!storage::home_lock::server_running(home))
    return std::nullopt;
  auto address = storage::read_server_json(home);
  if (!address || address->zmq.empty())
    return std::nullopt;
  return address->zmq;
}

template <class T>
void send(zmq::socket_t& socket, wire::message_type type, const T& payload) {
  auto head = wire::encode_envelope({wire::protocol_version, type, 0, ""});
  auto body = wire::encode(payload);
  std::array<zmq::const_buffer, 2> frames{zmq::buffer(head), zmq::buffer(body)};
  (void)zmq::send_multipart(socket, frames, zmq::send_flags::dontwait);
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
  offers_.push_back(cpu_offer());  // the CPU is always offered (seed 001)
  for (const auto& d : inventory.devices()) {
    if (d.name == "cpu")
      continue;
    if (!cfg_.devices.empty()
        && std::find(cfg_.devices.begin(), cfg_.devices.end(), d.name) == cfg_.devices.end())
      continue;
    offers_.push_back({d.name, kind_of(d.name), d.uuid, d.total_bytes, d.total_bytes});
  }
}

hello agent::make_hello() const {
  hello h;
  h.name = cfg_.name;
  h.version = version();
  h.env_digest = fnv1a_hex(environment_);
  h.node_types_digest = runtime::node_types_digest();
  h.devices = offers_;
  h.credential = storage::read_token(cfg_.home).value_or("");
  h.one_shot = cfg_.one_shot;
  return h;
}

std::optional<std::string> agent::run() {
  zmq::context_t context{1};
  std::optional<zmq::socket_t> socket;
  std::string connected_to;
  bool welcomed = false;
  auto heartbeat_every = std::chrono::duration_cast<std::chrono::milliseconds>(default_heartbeat);
  auto last_hello = steady::time_point{};
  auto last_heartbeat = steady::time_point{};
  auto last_endpoint_check = steady::time_point{};

  while (!stop_) {
    auto now = steady::now();
    if (now - last_endpoint_check >= endpoint_check_interval || !socket) {
      last_endpoint_check = now;
      auto endpoint = server_endpoint(cfg_.home);
      if (endpoint && *endpoint != connected_to) {
        socket.emplace(context, zmq::socket_type::dealer);
        socket->set(zmq::sockopt::linger, 0);
        // Nothing queues for a server that is not there: a hello is sent again when it is.
        socket->set(zmq::sockopt::immediate, 1);
        socket->connect(*endpoint);
        connected_to = *endpoint;
        welcomed = false;
        last_hello = {};
        spdlog::info("agent '{}': connecting to {}", cfg_.name, connected_to);
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
    if (welcomed && now - last_heartbeat >= heartbeat_every) {
      send(*socket, wire::message_type::heartbeat, heartbeat{offers_, {}});
      last_heartbeat = now;
    }
    zmq::pollitem_t items[] = {{socket->handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 1, std::chrono::milliseconds(100));
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
                     cfg_.name, connected_to, w->server_version, heartbeat_every.count());
      }
    } else if (type == wire::message_type::refused) {
      auto r = wire::decode<refused>(parts[1].to_string_view());
      if (!r)
        continue;
      if (!r->retry) {
        spdlog::error("agent '{}': the server refused it: {}", cfg_.name, r->reason);
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
