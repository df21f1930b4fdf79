#include "apps/param_overrides.hpp"

#include "actors/policy/sweep_spec.hpp"
#include "messages/text.hpp"

namespace cdui::apps {

namespace {

constexpr const char* override_form = "the form is NODE.PARAM=VALUE, e.g. loader.batch_size=512";

std::string bad_override(std::string_view text, const std::string& why) {
  return "--set " + text::quoted(text) + ": " + why;
}

} // namespace

std::variant<param_override, std::string> parse_override(std::string_view text) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos)
    return bad_override(text, std::string{"no '='; "} + override_form);
  auto key = text.substr(0, eq);
  // A node id may hold dots; a param name never does: the last dot splits them.
  auto dot = key.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == key.size())
    return bad_override(text, std::string{"no NODE.PARAM before '='; "} + override_form);
  auto raw = std::string{text.substr(eq + 1)};
  if (!text::is_utf8(raw))
    return bad_override(text, "the value is not valid UTF-8");
  auto value = nlohmann::json::parse(raw, nullptr, false);
  if (value.is_discarded())
    value = raw;
  return param_override{std::string{key.substr(0, dot)}, std::string{key.substr(dot + 1)},
                        std::move(value)};
}

std::string apply_overrides(nlohmann::json& graph, const std::vector<param_override>& overrides) {
  if (overrides.empty())
    return "";
  if (!graph.is_object() || !graph.contains("nodes") || !graph["nodes"].is_array())
    return "--set needs a graph with a \"nodes\" list";
  for (const auto& o : overrides)
    if (auto why = policy::set_node_param(graph, o.node, o.param, o.value); !why.empty())
      return "--set " + text::quoted(o.node + "." + o.param) + ": " + why;
  return "";
}

} // namespace cdui::apps
