// libFuzzer target: the CSV reader of the Dataset node (runtime/nodes/datasets.cpp). The reader is
// private to datasets.cpp, so each input runs as a user's file would: written to a file under the
// data root and read by a Dataset node through the engine. The first byte picks the node's params
// (task, label column, declared classes); the rest is the file.
#include <array>
#include <cstddef>
#include <cstdint>

#include "fuzz/dataset_harness.hpp"

namespace {

using nlohmann::json;

struct variant {
  json params;
  cdui::runtime::validated_graph graph;
};

std::array<variant, 4>& variants() {
  static std::array<variant, 4> all = [] {
    auto path = cdui::fuzz::data_file("input.csv").string();
    std::array<json, 4> params{{
      {{"name", "csv"}, {"path", path}},
      {{"name", "csv"}, {"path", path}, {"task", "regression"}},
      {{"name", "csv"}, {"path", path}, {"label_column", "label"}},
      {{"name", "csv"}, {"path", "input.csv"}, {"classes", {"a", "b", "0", "1"}}},
    }};
    std::array<variant, 4> out;
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = {params[i], cdui::fuzz::dataset_graph(params[i])};
    return out;
  }();
  return all;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)cdui::fuzz::scratch();
  (void)variants();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  std::string_view file{reinterpret_cast<const char*>(data) + 1, size - 1};
  cdui::fuzz::write_file(cdui::fuzz::data_file("input.csv"), file);
  auto outcome = cdui::fuzz::run_dataset(variants()[data[0] % variants().size()].graph, "csv_fuzz");
  if (outcome.status == cdui::run_status::succeeded) {
    // One sample per line after the header, at most.
    long long lines = 0;
    for (char c : file)
      lines += c == '\n';
    auto n = cdui::fuzz::samples(outcome);
    if (n < 1 || n > lines)
      cdui::fuzz::fail("csv_fuzz", std::to_string(n) + " samples from " + std::to_string(lines + 1)
                                     + " lines");
  }
  return 0;
}
