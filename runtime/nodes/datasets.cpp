// Dataset node: Fashion-MNIST from Debian's gzipped IDX files, generated toy sets, and CSV files.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <map>
#include <set>

#include <torch/torch.h>

#include "messages/json_text.hpp"
#include "messages/text.hpp"
#include "runtime/file_access.hpp"
#include "runtime/node_call.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/dataset_files.hpp"
#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

std::string shown(const std::string& data) {
  return text::quoted(data, 80);
}

input_file open_data(node_call& call, const std::string& param, const std::string& path,
                     const std::string& hint) {
  auto file = file_access::for_run(call.run()).open(file_use::data, param, path);
  if (!file.is_open())
    throw node_error(file.refusal() + hint);
  return file;
}

namespace {

/// Fashion-MNIST's pixel mean and standard deviation over the training split, after /255.
constexpr double fashion_mnist_mean = 0.2860;
constexpr double fashion_mnist_std = 0.3530;

/// Fashion-MNIST's pixels as the models see them: (x / 255 - mean) / std in float32, N x 1 x H x W.
/// Computed as a table of the 256 byte values by those same tensor operations, then looked up in one
/// pass, so each pixel is bit for bit what the element-wise expression gives, without its four
/// image-sized temporaries.
at::Tensor normalised_pixels(const at::Tensor& images) {
  auto levels = torch::arange(256, torch::kInt64).to(torch::kUInt8);
  auto table = ((levels.to(torch::kFloat32) / 255.0 - fashion_mnist_mean) / fashion_mnist_std).contiguous();
  auto bytes = images.contiguous();
  auto out = at::empty({images.size(0), 1, images.size(1), images.size(2)}, at::kFloat);
  const auto* from = bytes.data_ptr<std::uint8_t>();
  const auto* lookup = table.data_ptr<float>();
  auto* to = out.data_ptr<float>();
  for (std::int64_t i = 0, n = bytes.numel(); i < n; ++i)
    to[i] = lookup[from[i]];
  return out;
}

dataset_value fashion_mnist(node_call& call) {
  auto root = call.string_param("root");
  auto prefix = call.string_param("split") == "test" ? "t10k" : "train";
  auto limit = call.int_param("limit");
  std::string hint = root == fashion_mnist_root
                       ? " (is Debian's dataset-fashion-mnist package installed?)" : "";
  auto images = read_idx(open_data(call, "root", root + "/" + prefix + "-images-idx3-ubyte.gz", hint),
                         limit);
  auto labels = read_idx(open_data(call, "root", root + "/" + prefix + "-labels-idx1-ubyte.gz", hint),
                         limit);
  if (images.dim() != 3 || labels.dim() != 1 || images.size(0) != labels.size(0)) {
    std::ostringstream shapes;
    shapes << "param 'root': " << text::quoted(root) << " holds " << prefix << "-images of shape "
           << images.sizes() << " and " << prefix << "-labels of shape " << labels.sizes()
           << "; they must be N x height x width and N";
    throw node_error(shapes.str());
  }
  dataset_value d;
  d.name = "fashion_mnist";
  d.inputs = normalised_pixels(images);
  d.targets = labels.to(torch::kInt64);
  d.num_classes = 10;
  d.sample_shape = {1, images.size(1), images.size(2)};
  return d;
}

/// A generator for one dataset node: the run seed, the dataset's name and split, so a train and a
/// test split of the same toy set differ and each is the same on every run with that seed.
at::Generator dataset_rng(node_call& call) {
  auto key = call.string_param("name") + "/" + call.string_param("split");
  auto seed = call.run().seed ^ (std::hash<std::string>{}(key) * 0x9E3779B97F4A7C15ULL);
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

/// Shuffles rows of x and y together.
void shuffle_rows(at::Tensor& x, at::Tensor& y, at::Generator& gen) {
  auto perm = torch::randperm(x.size(0), gen, torch::kInt64);
  x = x.index_select(0, perm);
  y = y.index_select(0, perm);
}

dataset_value two_class_toy(node_call& call, bool moons) {
  auto gen = dataset_rng(call);
  auto n = call.int_param("n_samples");
  auto noise = call.number_param("noise");
  auto n_out = n / 2;
  auto n_in = n - n_out;
  auto t_out = torch::linspace(0, M_PI, n_out, torch::kFloat64);
  auto t_in = torch::linspace(0, M_PI, n_in, torch::kFloat64);
  at::Tensor outer, inner;
  if (moons) {
    outer = torch::stack({torch::cos(t_out), torch::sin(t_out)}, 1);
    inner = torch::stack({1 - torch::cos(t_in), 1 - torch::sin(t_in) - 0.5}, 1);
  } else {
    auto t2_out = torch::linspace(0, 2 * M_PI, n_out + 1, torch::kFloat64).narrow(0, 0, n_out);
    auto t2_in = torch::linspace(0, 2 * M_PI, n_in + 1, torch::kFloat64).narrow(0, 0, n_in);
    auto factor = call.number_param("factor");
    outer = torch::stack({torch::cos(t2_out), torch::sin(t2_out)}, 1);
    inner = torch::stack({torch::cos(t2_in), torch::sin(t2_in)}, 1) * factor;
  }
  auto x = torch::cat({outer, inner}, 0);
  x = x + noise * torch::randn(x.sizes(), gen, torch::kFloat64);
  auto y = torch::cat({torch::zeros({n_out}, torch::kInt64), torch::ones({n_in}, torch::kInt64)});
  shuffle_rows(x, y, gen);
  dataset_value d;
  d.name = moons ? "moons" : "circles";
  d.inputs = x.to(torch::kFloat32);
  d.targets = y;
  d.num_classes = 2;
  d.sample_shape = {2};
  return d;
}

dataset_value blobs(node_call& call) {
  auto gen = dataset_rng(call);
  auto n = call.int_param("n_samples");
  auto k = call.int_param("n_classes");
  auto f = call.int_param("n_features");
  auto centers = torch::rand({k, f}, gen, torch::kFloat64) * 20.0 - 10.0;
  auto y = torch::arange(n, torch::kInt64).remainder(k);
  auto x = centers.index_select(0, y)
           + call.number_param("cluster_std") * torch::randn({n, f}, gen, torch::kFloat64);
  shuffle_rows(x, y, gen);
  dataset_value d;
  d.name = "blobs";
  d.inputs = x.to(torch::kFloat32);
  d.targets = y;
  d.num_classes = k;
  d.sample_shape = {f};
  return d;
}

dataset_value regression(node_call& call) {
  auto gen = dataset_rng(call);
  auto n = call.int_param("n_samples");
  auto f = call.int_param("n_features");
  auto x = torch::randn({n, f}, gen, torch::kFloat64);
  // The same true weights for every split of a run: drawn from a generator that ignores the split.
  auto w_gen = at::make_generator<at::CPUGeneratorImpl>(call.run().seed + 1);
  auto w = torch::randn({f, 1}, w_gen, torch::kFloat64) / std::sqrt(static_cast<double>(f));
  auto y = x.matmul(w) + call.number_param("noise") * torch::randn({n, 1}, gen, torch::kFloat64);
  dataset_value d;
  d.name = "regression";
  d.inputs = x.to(torch::kFloat32);
  d.targets = y.to(torch::kFloat32);
  d.classification = false;
  d.sample_shape = {f};
  return d;
}

port_values run_dataset(node_call& call) {
  auto name = call.string_param("name");
  dataset_value d;
  if (name == "fashion_mnist")
    d = fashion_mnist(call);
  else if (name == "moons" || name == "circles")
    d = two_class_toy(call, name == "moons");
  else if (name == "blobs")
    d = blobs(call);
  else if (name == "regression")
    d = regression(call);
  else
    d = csv(call);
  call.final_metrics = {{"samples", d.size()}};
  return {{"dataset", make_value(std::make_shared<dataset_value>(std::move(d)))}};
}

} // namespace

void bind_dataset_nodes_runs(node_runs& runs) {
  runs["Dataset"] = run_dataset;
}

} // namespace cdui::runtime::nodes
