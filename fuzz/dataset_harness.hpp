#pragma once

// What csv_fuzz and idx_fuzz share: a temporary folder that is the data root
// (CODEFYUI_DATA_ROOTS, runtime/file_access.hpp) and the run's folder, and one Dataset node run
// through the real validator and engine, as a graph with that node alone would run.

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "runtime/engine.hpp"
#include "runtime/validate.hpp"

namespace cdui::fuzz {

/// The fuzzer's own temporary folder, made once per process and removed at exit. Held on the heap
/// and never destroyed: the atexit handler that removes it runs after the statics made later.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path* dir = [] {
    auto* base = new std::filesystem::path{std::filesystem::temp_directory_path()
                                           / ("cdui-fuzz-" + std::to_string(::getpid()))};
    std::filesystem::create_directories(*base / "data");
    std::filesystem::create_directories(*base / "run");
    ::setenv("CODEFYUI_DATA_ROOTS", (*base / "data").c_str(), 1);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch(), ignored);
    });
    return base;
  }();
  return *dir;
}

inline std::filesystem::path data_file(const std::string& name) { return scratch() / "data" / name; }

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

[[noreturn]] inline void fail(const char* target, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", target, what.c_str());
  std::abort();
}

/// A graph of one Dataset node with `params`, validated; aborts when it does not validate (the
/// harness's own graph is wrong, not the input).
inline runtime::validated_graph dataset_graph(const nlohmann::json& params) {
  nlohmann::json doc = {{"nodes", {{{"id", "data"}, {"type", "Dataset"}, {"params", params}}}},
                        {"edges", nlohmann::json::array()}};
  auto result = runtime::validate_graph(doc);
  if (auto* errors = std::get_if<std::vector<runtime::graph_error>>(&result))
    fail("dataset_harness", "the harness's graph does not validate: " + runtime::to_string(*errors));
  return std::get<runtime::validated_graph>(std::move(result));
}

/// One graph of a lone Dataset node for each set of params: the variants an input's first byte
/// picks among, validated once.
template <std::size_t N>
std::array<runtime::validated_graph, N> dataset_graphs(const std::array<nlohmann::json, N>& params) {
  std::array<runtime::validated_graph, N> graphs;
  for (std::size_t i = 0; i < N; ++i)
    graphs[i] = dataset_graph(params[i]);
  return graphs;
}

/// Executes the graph on the CPU, one thread, events dropped. A node's failure is an outcome, not
/// a crash: the run must end succeeded or failed, and a failure must say why.
inline run_outcome run_dataset(const runtime::validated_graph& graph, const char* target) {
  runtime::run_context ctx;
  ctx.run_id = "fuzz";
  ctx.run_dir = scratch() / "run";
  ctx.seed = 1;
  ctx.num_threads = 1;
  ctx.emit = [](const std::string&, const nlohmann::json&) {};
  auto outcome = runtime::execute(graph, ctx);
  if (outcome.status != run_status::succeeded && outcome.status != run_status::failed)
    fail(target, "a run ended neither succeeded nor failed: " + outcome.error);
  if (outcome.status == run_status::failed && outcome.error.empty())
    fail(target, "a failed run without an error");
  return outcome;
}

/// The "samples" final metric of node data, or -1 when the run has none.
inline long long samples(const run_outcome& outcome) {
  auto metrics = nlohmann::json::parse(outcome.final_metrics, nullptr, false);
  if (!metrics.is_object() || !metrics.contains("data") || !metrics["data"].contains("samples"))
    return -1;
  return metrics["data"]["samples"].get<long long>();
}

} // namespace cdui::fuzz
