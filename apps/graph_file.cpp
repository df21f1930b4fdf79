// Reading and validating a graph file, and `cdui validate`: no libtorch (runtime/validate.hpp and
// the built-in node specs are torch-free), so the command line's front binary has them.
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "apps/run_command.hpp"
#include "runtime/validate.hpp"

namespace cdui::apps {

/// Validates a graph's text; prints why it is not valid (naming the file) and returns nullopt.
std::optional<loaded_graph> check_graph(const std::filesystem::path& file, std::string text) {
  auto result = runtime::validate_graph(std::string_view{text});
  if (auto* errors = std::get_if<std::vector<runtime::graph_error>>(&result)) {
    for (const auto& e : *errors)
      std::fprintf(stderr, "%s: %s\n", file.c_str(), e.message.c_str());
    return std::nullopt;
  }
  return loaded_graph{std::move(text), std::get<runtime::validated_graph>(std::move(result))};
}

std::optional<loaded_graph> load_graph(const std::filesystem::path& file) {
  auto text = read_graph_file(file);
  if (!text)
    return std::nullopt;
  return check_graph(file, std::move(*text));
}

std::optional<std::string> read_graph_file(const std::filesystem::path& file) {
  std::error_code ec;
  const char* why = nullptr;
  if (!std::filesystem::exists(file, ec))
    why = "no such file";
  else if (std::filesystem::is_directory(file, ec))
    why = "it is a folder, not a file";
  std::ifstream in;
  if (why == nullptr) {
    in.open(file, std::ios::binary);
    if (!in)
      why = errno == EACCES ? "permission denied" : "it cannot be opened";
  }
  if (why != nullptr) {
    std::fprintf(stderr, "cdui: cannot read %s: %s\n", file.c_str(), why);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int validate_command(const std::filesystem::path& graph_file) {
  auto loaded = load_graph(graph_file);
  if (!loaded)
    return exit_usage;
  std::printf("%s: valid (%zu nodes, %zu edges)\n", graph_file.c_str(),
              loaded->graph.g.nodes.size(), loaded->graph.g.edges.size());
  return exit_ok;
}

} // namespace cdui::apps
