#include "actors/policy/run_options.hpp"

#include <algorithm>
#include <limits>

#include "actors/policy/worker_table.hpp"
#include "devices/device.hpp"
#include "messages/json_text.hpp"
#include "messages/text.hpp"

namespace cdui::policy {

namespace {

constexpr const char* known_options =
  "device, seed, deterministic, record_outputs, lane, session, weights_persistent, target, resume_from";

std::string check_device(const std::string& field, const nlohmann::json& value) {
  if (!value.is_string())
    return field + ": must be a device string such as \"cpu\", \"cuda:0\" or \"sim:0\"";
  auto parsed = devices::parse_device(value.get<std::string>());
  if (auto* err = std::get_if<devices::device_parse_error>(&parsed))
    return field + ": " + err->message;
  // A node's device with a bad index falls back to its kind (docs/graph-format.md, "Devices"); the
  // run's own device picks the queue it waits in, so it must name one exactly.
  if (std::get<devices::device_spec>(parsed).malformed)
    return field + ": " + text::quoted(value.get<std::string>())
           + " has no valid index (expected cpu, auto, cuda, cuda:N, mps, mps:N, sim or sim:N, N "
             "a number from 0)";
  return "";
}

/// A device of target.devices: a device, or WORKER/DEVICE in a set across workers (docs/ddp.md).
std::string check_set_device(const std::string& field, const nlohmann::json& value) {
  auto slash = value.is_string() ? value.get<std::string>().find('/') : std::string::npos;
  if (slash == std::string::npos)
    return check_device(field, value);
  auto text = value.get<std::string>();
  if (!is_valid_worker_name(text.substr(0, slash)))
    return field + ": " + text::quoted(text) + " does not start with a worker's name (" + worker_name_rule + ")";
  return check_device(field, text.substr(slash + 1));
}

std::string read_bool(const nlohmann::json& options, const char* key, bool& out) {
  const auto& value = options[key];
  if (!value.is_boolean())
    return std::string{"option '"} + key + "': must be true or false, not " + json_text(value);
  out = value.get<bool>();
  return "";
}

std::string read_target(const nlohmann::json& target, run_request& request) {
  if (!target.is_object())
    return "option 'target': must be an object such as {\"devices\": [\"sim:0\", \"sim:1\"]}";
  if (target.contains("worker") && target.contains("pool"))
    return "option 'target': give \"worker\" or \"pool\", not both";
  for (const auto& [key, value] : target.items()) {
    if (key == "worker") {
      if (!value.is_string() || value.get<std::string>().empty())
        return "option 'target.worker': must be a worker name or \"local\"";
      // Whether that worker exists is the run queue's to say: it knows who has connected.
      request.worker = value == "local" ? "" : value.get<std::string>();
    } else if (key == "pool") {
      if (value != "one-shot")
        return "option 'target.pool': the only pool is \"one-shot\" (the one-shot workers)";
      request.worker = one_shot_pool;
    } else if (key == "devices") {
      if (!value.is_array() || value.empty())
        return "option 'target.devices': must be a non-empty list of device strings";
      request.devices.clear();
      for (std::size_t i = 0; i < value.size(); ++i) {
        auto err = check_set_device("option 'target.devices[" + std::to_string(i) + "]'", value[i]);
        if (!err.empty())
          return err;
        request.devices.push_back(value[i].get<std::string>());
      }
    } else if (key == "memory_gib") {
      if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > max_memory_gib)
        return "option 'target.memory_gib': must be a number of GiB above 0 (per card of the run's "
               "devices), not " + json_text(value);
      request.memory_bytes = static_cast<std::int64_t>(value.get<double>() * bytes_per_gib);
    } else if (key == "memory_source") {
      // "measured" is what the server writes when it applied a graph's measured default.
      if (value != "estimate" && value != "typed" && value != "measured")
        return "option 'target.memory_source': must be \"estimate\" (a budget taken from the static "
               "estimate) or \"typed\", not " + json_text(value);
      request.memory_source = value == "typed" ? "" : value.get<std::string>();
    } else if (key == "wait") {
      if (!value.is_boolean())
        return "option 'target.wait': must be true or false, not " + json_text(value);
      request.has_wait = true;
      request.wait = value.get<bool>();
    } else {
      return "option 'target': unknown key '" + key
             + "' (known: worker, pool, devices, memory_gib, memory_source, wait)";
    }
  }
  if (!request.memory_source.empty() && request.memory_bytes == 0)
    return "option 'target.memory_source': gives where target.memory_gib came from; give "
           "target.memory_gib too";
  return "";
}

} // namespace

std::string apply_options(const nlohmann::json& options, run_request& request) {
  if (!options.is_object())
    return "field 'options': must be a JSON object";
  for (const auto& [key, value] : options.items()) {
    std::string err;
    if (key == "device") {
      err = check_device("option 'device'", value);
      if (err.empty())
        request.device = value.get<std::string>();
    } else if (key == "seed") {
      constexpr auto max_seed = std::numeric_limits<std::uint32_t>::max();
      if (!value.is_number_integer() || (value.is_number_unsigned() ? value.get<std::uint64_t>() > max_seed
                                                                    : value.get<std::int64_t>() < 0))
        err = "option 'seed': must be an integer from 0 to 4294967295, not " + json_text(value);
      else {
        request.has_seed = true;
        request.seed = value.get<std::uint64_t>();
      }
    } else if (key == "deterministic") {
      err = read_bool(options, "deterministic", request.deterministic);
    } else if (key == "record_outputs") {
      err = read_bool(options, "record_outputs", request.record_outputs);
    } else if (key == "weights_persistent") {
      err = read_bool(options, "weights_persistent", request.weights_persistent);
    } else if (key == "lane") {
      auto lane = value.is_string() ? parse_run_lane(value.get<std::string>()) : std::nullopt;
      if (!lane)
        err = "option 'lane': must be \"queued\" or \"interactive\", not " + json_text(value);
      else
        request.lane = *lane;
    } else if (key == "session") {
      if (!value.is_string() || value.get<std::string>().empty())
        err = "option 'session': must be a non-empty string naming the editor session";
      else
        request.session = value.get<std::string>();
    } else if (key == "target") {
      err = read_target(value, request);
    } else if (key == "resume_from") {
      if (!value.is_string() || value.get<std::string>().empty())
        err = "option 'resume_from': must be a non-empty string, the path of a TrainingLoop checkpoint "
              "or of a run's folder";
      else
        request.resume_from = value.get<std::string>();
    } else {
      err = "option '" + key + "' is not known (known: " + known_options + ")";
    }
    if (!err.empty())
      return err;
  }
  if (!request.device.empty() && !request.devices.empty())
    return "option 'device' and option 'target.devices' both name the run's devices; give one: "
           "device for one card, target.devices for a set";
  bool spread = std::any_of(request.devices.begin(), request.devices.end(),
                            [](const std::string& d) { return d.find('/') != std::string::npos; });
  if (spread && !request.worker.empty())
    return "option 'target.devices': a device set across workers names each card's worker (w1/cuda:0); "
           "leave out option 'target.worker'";
  if (spread && request.weights_persistent)
    return "option 'weights_persistent': a run on workers starts fresh (no node state store there)";
  if (spread && request.lane == run_lane::interactive)
    return "option 'target.devices': an interactive run executes on this server, not across workers";
  if (request.worker == one_shot_pool && !request.devices.empty())
    return "option 'target.devices': a run for the one-shot pool takes one device; give its kind "
           "with option 'device' (e.g. \"sim\" or \"cuda\")";
  // No persistent weights: every worker run starts fresh (docs/workers.md, "Run a run on a worker").
  if (!request.worker.empty() && request.weights_persistent)
    return "option 'weights_persistent': a run on a worker starts fresh (no node state store "
           "there); run it on this server (target.worker \"local\") for that";
  // Recorded outputs stay on the worker, and a one-shot agent exits when its run ends
  // (docs/workers.md, "Recorded outputs of a worker run").
  if (request.worker == one_shot_pool && request.record_outputs)
    return "option 'record_outputs': a one-shot worker exits when its run ends, taking the outputs "
           "with it; run it on a worker that stays (or on this server)";
  if (!request.worker.empty() && request.lane == run_lane::interactive)
    return "option 'target.worker': an interactive run executes on this server (the "
           "canvas never goes to a worker); queue it to run "
           + (request.worker == one_shot_pool ? std::string{"in the one-shot pool"}
              : request.worker == any_worker  ? std::string{"on any worker"}
                                              : "on worker '" + request.worker + "'");
  if (!request.session.empty() && request.lane != run_lane::interactive)
    return "option 'session' names the editor session of an interactive run; it needs "
           "option 'lane' \"interactive\"";
  return "";
}

std::variant<run_request, submission_error> parse_submission(const nlohmann::json& body) {
  if (!body.is_object())
    return submission_error{true, "the body must be a JSON object {\"graph\": {...}}"};
  for (const auto& [key, value] : body.items())
    if (key != "graph" && key != "options" && key != "name")
      return submission_error{false, "field '" + key + "' is not known (known: graph, options, name)"};
  if (!body.contains("graph"))
    return submission_error{true, "field 'graph' is missing"};
  const auto& graph = body["graph"];
  if (!graph.is_object())
    return submission_error{true, "field 'graph' must be a JSON object, not " + std::string{graph.type_name()}};
  if (!graph.contains("nodes") || (graph["nodes"].is_array() && graph["nodes"].empty()))
    return submission_error{false, "field 'graph': the graph is empty (it has no nodes)"};
  run_request request;
  request.graph_json = json_text(graph);
  if (body.contains("name")) {
    const auto& name = body["name"];
    if (!name.is_string())
      return submission_error{false, "field 'name' must be a string"};
    request.name = name.get<std::string>();
    if (auto length = text::characters(request.name); length > max_run_name_length)
      return submission_error{false, "field 'name' is " + std::to_string(length)
                                       + " characters long; the most is "
                                       + std::to_string(max_run_name_length)};
  }
  if (body.contains("options"))
    if (auto err = apply_options(body["options"], request); !err.empty())
      return submission_error{false, err};
  return request;
}

nlohmann::json options_json(const run_request& r) {
  nlohmann::json o = nlohmann::json::object();
  if (!r.device.empty())
    o["device"] = r.device;
  if (r.has_seed)
    o["seed"] = r.seed;
  if (r.deterministic)
    o["deterministic"] = true;
  if (r.record_outputs)
    o["record_outputs"] = true;
  if (r.weights_persistent)
    o["weights_persistent"] = true;
  if (r.lane != run_lane::queued)
    o["lane"] = std::string{to_string(r.lane)};
  if (!r.session.empty())
    o["session"] = r.session;
  if (!r.devices.empty())
    o["target"]["devices"] = r.devices;
  if (r.worker == one_shot_pool)
    o["target"]["pool"] = "one-shot";
  else if (!r.worker.empty())
    o["target"]["worker"] = r.worker;
  if (r.memory_bytes > 0)
    o["target"]["memory_gib"] = static_cast<double>(r.memory_bytes) / bytes_per_gib;
  if (!r.memory_source.empty())
    o["target"]["memory_source"] = r.memory_source;
  if (r.has_wait)
    o["target"]["wait"] = r.wait;
  if (!r.resume_from.empty())
    o["resume_from"] = r.resume_from;
  return o;
}

} // namespace cdui::policy
