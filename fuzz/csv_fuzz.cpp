// libFuzzer target: the CSV reader of the Dataset node (runtime/nodes/datasets.cpp). The reader is
// private to datasets.cpp, so each input runs as a user's file would: written to a file under the
// data root and read by a Dataset node through the engine. The first byte picks the node's params
// (task, label column, declared classes); the rest is the file.
#include <array>
#include <cstddef>
#include <cstdint>

#include "fuzz/dataset_harness.hpp"

namespace {


std::array<cdui::runtime::validated_graph, 4>& graphs() {
  static auto all = [] {
    auto path = cdui::fuzz::data_file("input.csv").string();
    return cdui::fuzz::dataset_graphs<4>({{
      {{"name", "csv"}, {"path", path}},
      {{"name", "csv"}, {"path", path}, {"task", "regression"}},
      {{"name", "csv"}, {"path", path}, {"label_column", "label"}},
      {{"name", "csv"}, {"path", "input.csv"}, {"classes", {"a", "b", "0", "1"}}},
    }});
  }();
  return all;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)cdui::fuzz::scratch();
  (void)graphs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  std::string_view file{reinterpret_cast<const char*>(data) + 1, size - 1};
  cdui::fuzz::write_file(cdui::fuzz::data_file("input.csv"), file);
  auto outcome = cdui::fuzz::run_dataset(graphs()[data[0] % graphs().size()], "csv_fuzz");
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
