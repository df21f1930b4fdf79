// The Dataset node's Fashion-MNIST reader (runtime/nodes/datasets.cpp): what it holds and what it
// allocates on the way. Damaged IDX files are in nodes_test.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <zlib.h>

#include "devices/memory.hpp"
#include "runtime/nodes/values.hpp"
#include "runtime/run_stores.hpp"
#include "testkit/env.hpp"
#include "testkit/home.hpp"
#include "unit/runtime/run_helpers.hpp"

using cdui::test::add_node;
using cdui::test::require_succeeded;
using cdui::test::run_graph;
using nlohmann::json;

namespace {

/// Keeps the outputs a run records; the other stores hold nothing.
class recording_stores : public cdui::runtime::run_stores {
public:
  std::optional<cdui::runtime::cached_node> cached(const std::string&) override { return std::nullopt; }
  void cache(const std::string&, cdui::runtime::cached_node, std::int64_t) override {}
  void forget(const std::string&) override {}
  std::optional<cdui::runtime::value> persisted_model(const std::string&) override { return std::nullopt; }
  void persist_model(const std::string&, cdui::runtime::value, std::int64_t) override {}
  void record(std::map<std::string, cdui::runtime::port_values> outputs, std::int64_t) override {
    recorded = std::move(outputs);
  }
  std::map<std::string, cdui::runtime::port_values> recorded;
};

/// A gzipped IDX file of unsigned bytes with these dimensions and bytes.
void write_idx_gz(const std::filesystem::path& path, const std::vector<std::uint32_t>& dims,
                  const std::vector<std::uint8_t>& data) {
  std::string bytes{'\0', '\0', '\x08', static_cast<char>(dims.size())};
  for (auto d : dims)
    for (int shift : {24, 16, 8, 0})
      bytes += static_cast<char>((d >> shift) & 0xFF);
  bytes.append(data.begin(), data.end());
  gzFile gz = gzopen(path.c_str(), "wb6");
  BOOST_TEST_REQUIRE(gz != nullptr);
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
}

/// A Fashion-MNIST folder of `n` train images of 28 x 28 whose pixels run through every byte value,
/// and their labels.
std::vector<std::uint8_t> write_fashion_mnist(const std::filesystem::path& root, std::uint32_t n) {
  std::filesystem::create_directories(root);
  std::vector<std::uint8_t> pixels(std::size_t{n} * 28 * 28);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<std::uint8_t>((i * 7) % 256);
  std::vector<std::uint8_t> labels(n);
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<std::uint8_t>(i % 10);
  write_idx_gz(root / "train-images-idx3-ubyte.gz", {n, 28, 28}, pixels);
  write_idx_gz(root / "train-labels-idx1-ubyte.gz", {n}, labels);
  return pixels;
}

json dataset_graph(const std::filesystem::path& root, int limit) {
  json doc = {{"nodes", json::array()}, {"edges", json::array()}};
  add_node(doc, "data", "Dataset", {{"name", "fashion_mnist"}, {"root", root.string()}, {"limit", limit}});
  return doc;
}

} // namespace

BOOST_AUTO_TEST_SUITE(datasets_test)

BOOST_AUTO_TEST_CASE(fashion_mnist_pixels_are_the_normalisation_expression_bit_for_bit) {
  // The node looks each byte up in a table; the models must see what
  // ((x / 255 - mean) / std) in float32 gives, as before and as Python's loader gives.
  cdui::test::temp_home home;
  auto root = home.path() / "fmnist";
  auto pixels = write_fashion_mnist(root, 5);
  // Inflated by libdeflate where the machine has it, and by zlib (CODEFYUI_INFLATE=zlib): the same.
  for (const auto* inflate : {"", "zlib"}) {
    cdui::test::scoped_env inflater{"CODEFYUI_INFLATE", inflate};
    for (int limit : {0, 3}) {
      BOOST_TEST_CONTEXT("limit " << limit << ", CODEFYUI_INFLATE=" << inflate) {
        auto stores = std::make_shared<recording_stores>();
        cdui::test::run_options options;
        options.recorder = stores;
        auto run = run_graph(dataset_graph(root, limit), home.path(), options);
        require_succeeded(run);
        auto d = std::any_cast<std::shared_ptr<cdui::runtime::nodes::dataset_value>>(
          stores->recorded.at("data").at("dataset"));
        std::int64_t n = limit > 0 ? limit : 5;
        auto bytes = torch::from_blob(pixels.data(), {5, 28, 28}, torch::kUInt8).narrow(0, 0, n);
        auto expected = ((bytes.to(torch::kFloat32) / 255.0 - 0.2860) / 0.3530).unsqueeze(1);
        BOOST_TEST(d->inputs.sizes() == expected.sizes());
        BOOST_TEST(d->inputs.is_contiguous());
        BOOST_TEST(torch::equal(d->inputs, expected));
        BOOST_TEST(torch::equal(d->targets, torch::arange(n, torch::kInt64).remainder(10)));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(loading_fashion_mnist_holds_its_bytes_once_and_its_floats_once) {
  // The file is inflated straight into one uint8 tensor and converted in one pass: the counting
  // allocator sees at most those bytes, the float images and the labels (uint8 and int64) at once.
  // Before, a clone of the bytes and two float temporaries of the images were live too.
  cdui::test::temp_home home;
  auto root = home.path() / "fmnist";
  constexpr std::int64_t n = 2000;
  write_fashion_mnist(root, n);
  for (const auto* inflate : {"", "zlib"}) {
    cdui::test::scoped_env inflater{"CODEFYUI_INFLATE", inflate};
    auto scope = std::make_shared<cdui::devices::memory_scope>("cpu", 0);
    {
      cdui::devices::memory_scope_guard charged{scope};
      require_succeeded(run_graph(dataset_graph(root, 0), home.path()));
    }
    std::int64_t bytes = n * 28 * 28;
    std::int64_t held = bytes + 4 * bytes + n + 8 * n;
    constexpr std::int64_t small = 64 * 1024;  // the lookup table, scalars, the IDX headers
    BOOST_TEST(scope->stats().peak >= 4 * bytes, "CODEFYUI_INFLATE=" << inflate);
    BOOST_TEST(scope->stats().peak <= held + small, "CODEFYUI_INFLATE=" << inflate);
  }
}

BOOST_AUTO_TEST_SUITE_END()
