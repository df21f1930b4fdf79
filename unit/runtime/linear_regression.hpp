#pragma once

// A linear model trained with plain sgd on a CSV the test writes: small enough to follow by hand,
// so the accumulation and loss-scale tests can compare the engine's weights with a computation.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/randn.h>
#include <nlohmann/json.hpp>

#include "unit/runtime/saved_weights.hpp"

namespace cdui::test {

/// Samples of a regression set: x [n, f] and y [n, 1], float32 as the CSV node reads them.
struct regression_rows {
  at::Tensor x;
  at::Tensor y;
};

/// n rows of y = x.w + 0.5 + noise (x ~ N(0, 1)), the same for the same `seed`. `scale` multiplies
/// y, to make the gradients large (clipping). The first `overflowing` rows get 1e38 as their first
/// feature: a forward pass through them overflows and its gradient is inf or NaN.
inline regression_rows make_rows(std::int64_t n, std::int64_t f, std::uint64_t seed,
                                 double scale = 1.0, std::int64_t overflowing = 0) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto x = at::randn({n, f}, gen, at::kFloat);
  auto w = at::randn({f, 1}, gen, at::kFloat);
  auto y = (x.matmul(w) + 0.5 + 0.1 * at::randn({n, 1}, gen, at::kFloat)) * scale;
  if (overflowing > 0)
    x.narrow(0, 0, overflowing).select(1, 0).fill_(1e38);
  return {x, y};
}

/// The rows [from, from + count).
inline regression_rows slice(const regression_rows& rows, std::int64_t from, std::int64_t count) {
  return {rows.x.narrow(0, from, count), rows.y.narrow(0, from, count)};
}

/// Writes `rows` as a CSV (x1..xf, y) that reads back to the same float32 values.
inline std::filesystem::path write_csv(const std::filesystem::path& path, const regression_rows& rows) {
  std::ofstream out{path};
  auto f = rows.x.size(1);
  for (std::int64_t c = 0; c < f; ++c)
    out << "x" << c + 1 << ",";
  out << "y\n";
  auto cell = [](float v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
    return std::string{text};
  };
  for (std::int64_t r = 0; r < rows.x.size(0); ++r) {
    for (std::int64_t c = 0; c < f; ++c)
      out << cell(rows.x[r][c].item<float>()) << ",";
    out << cell(rows.y[r][0].item<float>()) << "\n";
  }
  return path;
}

/// Linear(f -> 1) over the CSV at `csv`, mse, sgd (momentum 0) at `lr`, batches in file order.
/// Node ids: data, loader, model, loss, opt, init (ModelSaver of the untrained model, init.pt),
/// loop (one epoch, a progress event per batch), save (ModelSaver of the trained model, trained.pt).
inline nlohmann::json linear_graph(const std::filesystem::path& csv, std::int64_t batch_size,
                                   std::int64_t accumulate_steps, double lr) {
  nlohmann::json doc = R"({
    "nodes": [
      {"id": "data", "type": "Dataset", "params": {"name": "csv", "task": "regression"}},
      {"id": "loader", "type": "DataLoader", "params": {"shuffle": false}},
      {"id": "model", "type": "Model", "params": {"layers": [{"type": "Linear", "out_features": 1}]}},
      {"id": "loss", "type": "Loss", "params": {"kind": "mse"}},
      {"id": "opt", "type": "Optimizer", "params": {"name": "sgd", "momentum": 0.0}},
      {"id": "init", "type": "ModelSaver", "params": {"path": "init.pt"}},
      {"id": "loop", "type": "TrainingLoop", "params": {"epochs": 1, "progress_interval_ms": 0}},
      {"id": "save", "type": "ModelSaver", "params": {"path": "trained.pt"}}
    ],
    "edges": [
      {"from": "data.dataset", "to": "loader.dataset"},
      {"from": "data.dataset", "to": "model.dataset"},
      {"from": "model.model", "to": "init.model"},
      {"from": "model.model", "to": "loop.model"},
      {"from": "loader.dataloader", "to": "loop.dataloader"},
      {"from": "loss.loss_fn", "to": "loop.loss_fn"},
      {"from": "opt.optimizer", "to": "loop.optimizer"},
      {"from": "loop.model", "to": "save.model"}
    ]
  })"_json;
  for (auto& n : doc["nodes"]) {
    if (n["id"] == "data")
      n["params"]["path"] = csv.string();
    if (n["id"] == "loader")
      n["params"]["batch_size"] = batch_size;
    if (n["id"] == "opt")
      n["params"]["lr"] = lr;
    if (n["id"] == "loop")
      n["params"]["accumulate_steps"] = accumulate_steps;
  }
  return doc;
}

/// The weight and bias of a Linear(f -> 1) in float64, to compute steps by hand.
struct linear_params {
  at::Tensor w;  // [1, f]
  at::Tensor b;  // [1]
};

/// Linear1's weight and bias from a file that ModelSaver wrote for linear_graph's model.
inline linear_params linear_from(const named_tensors& saved) {
  BOOST_TEST_REQUIRE(saved.count("Linear1.weight") == 1u);
  BOOST_TEST_REQUIRE(saved.count("Linear1.bias") == 1u);
  return {saved.at("Linear1.weight").to(at::kDouble), saved.at("Linear1.bias").to(at::kDouble)};
}

/// The gradient of mean((x.w^T + b - y)^2) over `rows`: what mse over one batch of them gives.
inline linear_params mse_gradient(const linear_params& p, const regression_rows& rows) {
  auto x = rows.x.to(at::kDouble);
  auto y = rows.y.to(at::kDouble);
  auto residual = x.matmul(p.w.t()) + p.b - y;  // [n, 1]
  auto n = static_cast<double>(x.size(0));
  return {2.0 / n * residual.t().matmul(x), 2.0 / n * residual.sum(0)};
}

/// One plain sgd step: p - lr * g.
inline linear_params sgd_step(const linear_params& p, const linear_params& g, double lr) {
  return {p.w - lr * g.w, p.b - lr * g.b};
}

/// The largest absolute difference between two sets of Linear parameters.
inline double max_difference(const linear_params& a, const linear_params& b) {
  return std::max((a.w - b.w).abs().max().item<double>(), (a.b - b.b).abs().max().item<double>());
}

/// The global L2 norm over weight and bias of a - b.
inline double change_norm(const linear_params& a, const linear_params& b) {
  auto squares = (a.w - b.w).pow(2).sum() + (a.b - b.b).pow(2).sum();
  return squares.sqrt().item<double>();
}

/// The largest absolute difference between two models' weights (same names); inf if they differ.
inline double max_difference(const named_tensors& a, const named_tensors& b) {
  if (a.size() != b.size())
    return INFINITY;
  double worst = 0.0;
  for (const auto& [name, t] : a) {
    auto other = b.find(name);
    if (other == b.end() || other->second.sizes() != t.sizes())
      return INFINITY;
    worst = std::max(worst, (t.to(at::kDouble) - other->second.to(at::kDouble))
                              .abs().max().item<double>());
  }
  return worst;
}

/// True when every tensor holds only finite values.
inline bool all_finite(const named_tensors& weights) {
  for (const auto& [name, t] : weights)
    if (!at::isfinite(t).all().item<bool>())
      return false;
  return true;
}

} // namespace cdui::test
