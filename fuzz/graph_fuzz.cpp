// libFuzzer target: graph JSON validation (runtime/validate.hpp), the same call that a submit,
// `cdui validate` and `cdui run` make on a graph file. Any bytes give a validated graph or errors,
// never a crash or an exception; every error has a message; a valid graph's order covers its nodes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/validate.hpp"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "graph_fuzz: %s\n", what.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  auto result = cdui::runtime::validate_graph(text);
  if (auto* errors = std::get_if<std::vector<cdui::runtime::graph_error>>(&result)) {
    if (errors->empty())
      fail("refused with no error");
    for (const auto& e : *errors)
      if (e.message.empty())
        fail("an error without a message");
    (void)cdui::runtime::to_string(*errors);
    return 0;
  }
  const auto& graph = std::get<cdui::runtime::validated_graph>(result);
  if (graph.order.size() != graph.g.nodes.size() || graph.specs.size() != graph.g.nodes.size())
    fail("a valid graph whose order or specs do not cover its nodes");
  for (auto i : graph.order)
    if (i >= graph.g.nodes.size() || graph.specs[i] == nullptr)
      fail("a valid graph with a bad order or a node without a spec");
  return 0;
}
