// The agent's connection to its server (actors/agent/agent_actor.*): where the server is
// (server.json, or --server with its key), and a DEALER socket to it whose messages come back to
// the agent as (wire_in, connection, struct).
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/agent/agent_parts.hpp"
#include "storage/home.hpp"
#include "storage/server_files.hpp"

namespace cdui::actors::agent_parts {

namespace {

/// The server on `home`, if one runs there.
std::optional<server_contact> server_on(const std::filesystem::path& home) {
  if (!storage::home_lock::server_running(home))
    return std::nullopt;
  auto address = storage::read_server_json(home);
  if (!address || address->zmq.empty())
    return std::nullopt;
  return server_contact{address->zmq, address->zmq_public_key};
}

} // namespace

wire_link current_link(const agent_state& st) {
  return st.welcomed ? wire_link{st.socket} : wire_link{};
}

/// Tells every supervisor where to report now (nowhere, when not welcomed).
void relink(self_ptr self) {
  for (const auto& [id, r] : self->state.runs)
    self->send(r.supervisor, agent_atoms::link::value, current_link(self->state));
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

} // namespace cdui::actors::agent_parts
