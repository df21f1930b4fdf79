#pragma once

// Reads the weights a ModelSaver or CheckpointSaver wrote, with torch itself, to compare them.

#include <filesystem>
#include <map>
#include <string>

#include <boost/test/unit_test.hpp>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <torch/serialize/input-archive.h>

namespace cdui::test {

/// Every tensor of a torch archive, by its dotted path ("Linear1.weight").
using named_tensors = std::map<std::string, at::Tensor>;

namespace detail {

inline void collect(torch::serialize::InputArchive& archive, const std::string& prefix,
                    named_tensors& out) {
  for (const auto& key : archive.keys()) {
    at::Tensor tensor;
    torch::serialize::InputArchive child;
    if (archive.try_read(key, tensor))
      out[prefix + key] = tensor;
    else if (archive.try_read(key, child))
      collect(child, prefix + key + ".", out);
  }
}

} // namespace detail

/// The weights in a model file that ModelSaver wrote.
inline named_tensors load_weights(const std::filesystem::path& path) {
  BOOST_TEST_REQUIRE(std::filesystem::exists(path), path.string() << " does not exist");
  torch::serialize::InputArchive archive;
  archive.load_from(path.string());
  named_tensors out;
  detail::collect(archive, "", out);
  return out;
}

/// The model's weights in a checkpoint that CheckpointSaver wrote.
inline named_tensors load_checkpoint_model(const std::filesystem::path& path) {
  BOOST_TEST_REQUIRE(std::filesystem::exists(path), path.string() << " does not exist");
  torch::serialize::InputArchive archive, model;
  archive.load_from(path.string());
  BOOST_TEST_REQUIRE(archive.try_read("model", model), path.string() << " has no model");
  named_tensors out;
  detail::collect(model, "", out);
  return out;
}

/// The model files `a` and `b` (ModelSaver's) hold the same tensors within `atol`, each checked.
inline void check_close_weights(const std::filesystem::path& a, const std::filesystem::path& b, double atol = 1e-5) {
  auto trained = load_weights(a);
  auto reference = load_weights(b);
  BOOST_REQUIRE(trained.size() == reference.size());
  for (const auto& [name, t] : reference)
    BOOST_TEST(at::allclose(trained.at(name), t, /*rtol=*/0, atol),
               name << ": max difference " << (trained.at(name) - t).abs().max().item<double>());
}

/// True when both hold the same names and bitwise equal tensors.
inline bool same_weights(const named_tensors& a, const named_tensors& b) {
  if (a.size() != b.size())
    return false;
  for (const auto& [name, t] : a) {
    auto other = b.find(name);
    if (other == b.end() || !at::equal(t, other->second))
      return false;
  }
  return true;
}

} // namespace cdui::test
