// libFuzzer target: the IDX reader of the Dataset node (runtime/nodes/datasets.cpp), as
// fashion_mnist reads Debian's files. The reader is private to datasets.cpp, so each input is
// written as the two files of a Fashion-MNIST folder under the data root and read by a Dataset
// node through the engine. Input: one byte of flags (bit 0: gzip the files, as Debian ships them;
// bits 1-2: the node's limit, 0, 1, 3 or 100), a 2-byte little-endian length of the images file,
// the images file, then the labels file. zlib reads a file that is not gzip as it is.
//
// The crashes it found (docs/fuzzing.md, F1-F3) are in its corpus (crash-*).
#include <array>
#include <cstddef>
#include <cstdint>

#include <zlib.h>

#include "fuzz/dataset_harness.hpp"

namespace {

constexpr std::array<int, 4> limits{0, 1, 3, 100};

std::array<cdui::runtime::validated_graph, 4>& graphs() {
  static auto all = [] {
    std::array<nlohmann::json, 4> params;
    for (std::size_t i = 0; i < params.size(); ++i)
      params[i] = {{"name", "fashion_mnist"},
                   {"root", (cdui::fuzz::scratch() / "data").string()},
                   {"limit", limits[i]}};
    return cdui::fuzz::dataset_graphs(params);
  }();
  return all;
}

void write(const std::string& name, std::string_view bytes, bool gzip) {
  auto path = cdui::fuzz::data_file(name);
  if (!gzip) {
    cdui::fuzz::write_file(path, bytes);
    return;
  }
  gzFile gz = gzopen(path.c_str(), "wb1");
  if (gz == nullptr)
    cdui::fuzz::fail("idx_fuzz", "cannot write " + path.string());
  if (!bytes.empty())
    gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)cdui::fuzz::scratch();
  (void)graphs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3)
    return 0;
  auto flags = data[0];
  std::size_t images_size = data[1] | (std::size_t{data[2]} << 8);
  std::string_view rest{reinterpret_cast<const char*>(data) + 3, size - 3};
  images_size = std::min(images_size, rest.size());
  write("train-images-idx3-ubyte.gz", rest.substr(0, images_size), flags & 1);
  write("train-labels-idx1-ubyte.gz", rest.substr(images_size), flags & 1);
  auto outcome = cdui::fuzz::run_dataset(graphs()[(flags >> 1) % 4], "idx_fuzz");
  if (outcome.status == cdui::run_status::succeeded && cdui::fuzz::samples(outcome) < 0)
    cdui::fuzz::fail("idx_fuzz", "a dataset that loaded without a sample count");
  return 0;
}
