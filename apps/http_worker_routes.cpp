// The HTTP API's workers and devices (docs/http-api.md#workers, #devices): the workers and their
// enrollments (enroll, rekey, remove, drain), the devices, and how a card is shared.
#include <optional>
#include <string>

#include "actors/policy/worker_table.hpp"
#include "actors/server/server.hpp"
#include "apps/http_resources.hpp"
#include "apps/status_json.hpp"
#include "devices/device.hpp"
#include "messages/json_text.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

/// PUT .../sharing {"mode": "shared" | "exclusive"}: this server's device (`worker` empty) or a
/// worker's. 404 for a device or worker it does not know, 409 for a card that cannot be shared.
void put_sharing(cdui::server& rt, const std::string& worker, const std::string& device,
                 const httplib::Request& req, httplib::Response& res) {
  auto body = parse_json_text(req.body).value;
  auto mode = body.is_object() ? body.value("mode", json()) : json();
  if (mode != "shared" && mode != "exclusive") {
    refuse(res, 400, "field 'mode': must be \"shared\" (runs declare a memory budget and share the "
                     "card) or \"exclusive\" (one run at a time by count)");
    return;
  }
  auto done = worker.empty() ? rt.share_device(device, mode == "shared")
                             : rt.share_worker_device(worker, device, mode == "shared");
  if (!done) {
    refuse(res, done.error());
    return;
  }
  json answer{{"device", device}, {"mode", mode}};
  if (!worker.empty())
    answer["worker"] = worker;
  reply(res, 200, answer);
}

/// Whether `host` can go into a shell command as it is: a name or an address, nothing a shell
/// would read (a Host header is whatever the client sent).
/// IPv4 addresses and host names only: the agents' endpoint takes no IPv6.
bool plain_host(const std::string& host) {
  return !host.empty() && host.size() <= 253 && host[0] != '-'
         && host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
              == std::string::npos;
}

/// Where the command of a new credential keeps it, and the name it starts the agent with: the
/// worker's own; for a fleet ("slurm-*"), "slurm-fleet.credential" and the fleet's prefix with the
/// machine's short host name ("slurm-"$(hostname -s)), so that one command starts any member.
struct agent_identity {
  std::string file;
  std::string name;
};

agent_identity identity_of(const std::string& enrollment) {
  if (!policy::is_fleet_pattern(enrollment))
    return {enrollment + ".credential", enrollment};
  auto prefix = enrollment.substr(0, enrollment.size() - 1);
  auto stem = prefix.substr(0, prefix.find_last_not_of("-._") + 1);
  return {(stem.empty() ? std::string{"fleet"} : stem + "-fleet") + ".credential", prefix + "\"$(hostname -s)\""};
}

/// What a new credential comes with: the exact command that starts the worker on the other
/// machine. The host in it is `server_host` when the body gives one, else the host the request
/// was addressed to, else the host the agents' endpoint is bound to.
json credential_json(cdui::server& runtime, const enrollment& e, const httplib::Request& req,
                     const json& body) {
  auto endpoint = runtime.zmq_endpoint();  // tcp://HOST:PORT
  auto colon = endpoint.rfind(':');
  auto bound_host = endpoint.substr(6, colon - 6);
  auto port = endpoint.substr(colon + 1);
  std::string host;
  if (body.is_object() && body.contains("server_host"))
    host = body["server_host"].get<std::string>();  // checked by the caller
  else if (auto h = req.get_header_value("Host"); !h.empty())
    host = h.substr(0, h.find(':'));
  if (!plain_host(host) || host == "0.0.0.0")
    host = bound_host;
  if (host == "0.0.0.0")  // listening everywhere, reached by no usable name: this machine's
    if (auto name = devices::host_name(); plain_host(name))
      host = name;
  auto server = "tcp://" + host + ":" + port;
  auto key = runtime.zmq_public_key();
  auto [file, agent_name] = identity_of(e.name);
  auto command = "umask 077 && printf '%s\\n' '" + e.credential + "' > " + file
                 + " && cdui agent start --name " + agent_name + " --server " + server
                 + " --credential " + file + (key.empty() ? "" : " --server-key '" + key + "'");
  json j{{"name", e.name},
         {"fleet", policy::is_fleet_pattern(e.name)},
         {"credential", e.credential},
         {"credential_file", file},
         {"server", server},
         {"server_public_key", key.empty() ? json(nullptr) : json(key)},
         {"command", command},
         {"warning", nullptr}};
  if (bound_host.rfind("127.", 0) == 0)
    j["warning"] = "this server takes agents on " + endpoint + " only, which no other machine can "
                   "reach; restart it with `cdui start --host ADDRESS` (the wire is then encrypted) "
                   "or reach it through an SSH tunnel";
  return j;
}

/// Answers an enroll, rekey or remove that the registry refused; false when it was done.
bool refused_enrollment(httplib::Response& res, const enrollment& e) {
  if (e.error.empty())
    return false;
  refuse(res, e.refusal == "conflict"      ? 409
              : e.refusal == "unknown"     ? 404
              : e.refusal == "unavailable" ? 503
                                           : 400,
         e.error);
  return true;
}

/// The body of an enroll (`name` required) or a rekey (no `name`): a JSON object with at most
/// `server_host` besides. Empty for a rekey is an empty object. nullopt (400 sent) when it is bad.
std::optional<json> enrollment_body(const httplib::Request& req, httplib::Response& res,
                                    bool needs_name) {
  auto body = req.body.empty() && !needs_name ? json::object() : parse_json_text(req.body).value;
  if (!body.is_object()) {
    refuse(res, 400, needs_name ? "the body must be a JSON object {\"name\": \"...\"}"
                                : "the body must be empty or a JSON object {\"server_host\": \"...\"}");
    return std::nullopt;
  }
  if (needs_name && (!body.contains("name") || !body["name"].is_string())) {
    refuse(res, 400, "field 'name': the worker's name is required, as a string");
    return std::nullopt;
  }
  for (const auto& [key, value] : body.items())
    if ((key != "name" || !needs_name) && key != "server_host") {
      refuse(res, 400, "field '" + key + "' is not known (known: "
                         + (needs_name ? "name, server_host" : "server_host") + ")");
      return std::nullopt;
    }
  if (body.contains("server_host")
      && (!body["server_host"].is_string() || !plain_host(body["server_host"].get<std::string>()))) {
    refuse(res, 400, "field 'server_host': a host name or an IPv4 address the other machine reaches "
                     "this server by (letters, digits, '.', '-')");
    return std::nullopt;
  }
  return body;
}

void post_enroll(cdui::server& runtime, const httplib::Request& req, httplib::Response& res) {
  auto body = enrollment_body(req, res, true);
  if (!body)
    return;
  auto e = runtime.enroll_worker((*body)["name"].get<std::string>());
  if (!refused_enrollment(res, e))
    reply(res, 200, credential_json(runtime, e, req, *body));
}

/// GET /api/workers: every worker and enrollment, or a page of each (`limit` and `offset` page the
/// workers, `enrolled_limit` and `enrolled_offset` the enrollments, each in name order).
void get_workers(cdui::server& runtime, const httplib::Request& req, httplib::Response& res) {
  auto workers_page = page_asked(req, res);
  if (workers_page.refused)
    return;
  auto enrolled_page = page_asked(req, res, "enrolled_");
  if (enrolled_page.refused)
    return;
  auto w = runtime.workers();
  json extra = json::object();
  if (workers_page.page) {
    extra.update(page_fields(*workers_page.page, w.workers.size()));
    w.workers = workers_page.page->of(w.workers);
  }
  if (enrolled_page.page) {
    extra.update(page_fields(*enrolled_page.page, w.enrolled.size(), "enrolled_"));
    w.enrolled = enrolled_page.page->of(w.enrolled);
  }
  auto answer = workers_json(w, runtime.queue(false), runtime.memory());
  answer.update(extra);
  reply(res, 200, answer);
}

} // namespace

void add_worker_routes(route_table& routes, cdui::server& runtime) {
  auto& rt = runtime;
  routes.get("/api/workers", route_access::read, [&rt](const httplib::Request& req, httplib::Response& res) {
    get_workers(rt, req, res);
  });
  routes.post(R"(/api/workers/([^/]+)/(drain|undrain))", [&rt](const httplib::Request& req, httplib::Response& res) {
    std::string name = req.matches[1];
    bool draining = req.matches[2] == "drain";
    if (!rt.drain_worker(name, draining)) {
      refuse(res, 404, "no worker named '" + name + "' has connected to this server");
      return;
    }
    reply(res, 200, {{"worker", name}, {"draining", draining}});
  });
  routes.post("/api/workers/enroll", [&rt](const httplib::Request& req, httplib::Response& res) {
    post_enroll(rt, req, res);
  });
  routes.post(R"(/api/workers/([^/]+)/rekey)", [&rt](const httplib::Request& req, httplib::Response& res) {
    auto body = enrollment_body(req, res, false);
    if (!body)
      return;
    auto e = rt.rekey_worker(req.matches[1]);
    if (!refused_enrollment(res, e))
      reply(res, 200, credential_json(rt, e, req, *body));
  });
  routes.del(R"(/api/workers/([^/]+))", [&rt](const httplib::Request& req, httplib::Response& res) {
    auto e = rt.remove_worker(req.matches[1]);
    if (!refused_enrollment(res, e))
      reply(res, 200, {{"worker", e.name}, {"removed", true}});
  });
  routes.get("/api/devices", route_access::read, [&rt](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, devices_json(rt.queue(false), rt.memory()));
  });
  routes.put(R"(/api/devices/([^/]+)/sharing)", [&rt](const httplib::Request& req, httplib::Response& res) {
    put_sharing(rt, "", req.matches[1], req, res);
  });
  routes.put(R"(/api/workers/([^/]+)/devices/([^/]+)/sharing)",
             [&rt](const httplib::Request& req, httplib::Response& res) {
               put_sharing(rt, req.matches[1], req.matches[2], req, res);
             });
}

} // namespace cdui::apps
