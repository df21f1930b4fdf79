#include "runtime/estimate.hpp"

#include <algorithm>
#include <map>

#include "devices/memory.hpp"
#include "runtime/layer_shapes.hpp"
#include "runtime/precision.hpp"
#include "runtime/trainable.hpp"

namespace cdui::runtime {

namespace {

constexpr std::int64_t float_bytes = bytes_per_number(precision::fp32);
constexpr std::int64_t half_bytes = bytes_per_number(precision::bf16);
constexpr std::int64_t index_bytes = 8;  // int64 class labels and max-pool indices

/// The optimizers the estimator takes, in the order a refusal lists them.
constexpr optimizer_kind all_optimizers[] = {
  optimizer_kind::adam,    optimizer_kind::adamw,   optimizer_kind::sgd,
  optimizer_kind::sgd_momentum, optimizer_kind::rmsprop, optimizer_kind::rmsprop_momentum,
  optimizer_kind::adam8bit};

/// The limits that keep the estimate's arithmetic in int64 and its time in microseconds: a
/// Model's layers, and the elements of one layer's batch (with room for 16 channels of padding).
constexpr std::size_t max_layers = 1'000;
constexpr std::int64_t max_batch_elements = std::int64_t{1} << 44;

/// Where a rough estimate comes from: thrown inside, caught once and turned into the reason.
struct rough_reason {
  std::string text;
};

/// The graph's nodes by id and the node feeding each input port.
class graph_index {
public:
  explicit graph_index(const graph& g) {
    for (const auto& n : g.nodes)
      nodes_[n.id] = &n;
    for (const auto& e : g.edges)
      feeds_[{e.to.node, e.to.port}] = &e.from;
  }

  [[nodiscard]] const graph_node* node(const std::string& id) const {
    auto it = nodes_.find(id);
    return it == nodes_.end() ? nullptr : it->second;
  }

  /// The node connected to `port` of `node`; null when nothing is.
  [[nodiscard]] const graph_node* feeding(const graph_node& n, const std::string& port) const {
    auto it = feeds_.find({n.id, port});
    return it == feeds_.end() ? nullptr : node(it->second->node);
  }

private:
  std::map<std::string, const graph_node*> nodes_;
  std::map<std::pair<std::string, std::string>, const port_ref*> feeds_;
};

/// What a Dataset node gives, as far as its params tell.
struct data_facts {
  std::optional<sample_shape> shape;  // nullopt: the graph does not say (a CSV's columns)
  std::optional<std::int64_t> samples;
  bool classification = true;
};

data_facts dataset_facts(const graph_node& d) {
  const auto& p = d.params;
  auto name = p["name"].get<std::string>();
  data_facts f;
  if (name == "fashion_mnist" && d.was_given("root")) {
    // Files of its own: their image size and count are known only once the run reads them.
  } else if (name == "fashion_mnist") {
    f.shape = sample_shape{1, 28, 28};
    auto all = p["split"] == "test" ? 10'000 : 60'000;
    auto limit = p["limit"].get<std::int64_t>();
    f.samples = limit > 0 ? std::min<std::int64_t>(limit, all) : all;
  } else if (name == "moons" || name == "circles") {
    f.shape = sample_shape{2};
    f.samples = p["n_samples"].get<std::int64_t>();
  } else if (name == "blobs" || name == "regression") {
    f.shape = sample_shape{p["n_features"].get<std::int64_t>()};
    f.samples = p["n_samples"].get<std::int64_t>();
    f.classification = name == "blobs";
  } else {
    f.classification = p["task"] == "classification";
  }
  return f;
}

/// A DataLoader and its dataset: the batch one step takes.
struct batch_facts {
  data_facts data;
  std::int64_t batch = 0;
};

batch_facts loader_facts(const graph_index& index, const graph_node& loader) {
  if (loader.type != "DataLoader")
    throw rough_reason{"node '" + loader.id + "' (" + loader.type + ") gives batches the estimate "
                       "cannot size: no batch size"};
  const auto* dataset = index.feeding(loader, "dataset");
  if (dataset == nullptr || dataset->type != "Dataset")
    throw rough_reason{"DataLoader '" + loader.id + "' reads no Dataset node, so the samples' size "
                       "is unknown"};
  batch_facts b;
  b.data = dataset_facts(*dataset);
  b.batch = loader.params["batch_size"].get<std::int64_t>();
  if (b.data.samples)
    b.batch = std::min(b.batch, *b.data.samples);
  return b;
}

/// The Model node behind a loop's `model` input, through nodes that pass a model on.
const graph_node& model_node(const graph_index& index, const graph_node& loop) {
  const auto* n = index.feeding(loop, "model");
  while (n != nullptr && n->type == "CheckpointLoader")
    n = index.feeding(*n, "model");
  if (n == nullptr || n->type != "Model")
    throw rough_reason{"the model of TrainingLoop '" + loop.id + "' does not come from a Model node"
                       + (n ? " ('" + n->id + "' is a " + n->type + ")" : "")
                       + ", so its layers cannot be counted"};
  return *n;
}

/// Bytes held at once while tensors come and go: the simulated allocator of one pass.
class timeline {
public:
  using id = int;
  static constexpr id none = -1;

  id alloc(std::int64_t bytes) {
    sizes_.push_back(bytes);
    refs_.push_back(1);
    live_ += bytes;
    peak_ = std::max(peak_, live_);
    return static_cast<id>(sizes_.size() - 1);
  }
  /// Something held for a moment on top of what is live (a library's scratch buffer).
  void spike(std::int64_t bytes) { peak_ = std::max(peak_, live_ + bytes); }
  id hold(id t) {
    if (t != none)
      ++refs_[static_cast<std::size_t>(t)];
    return t;
  }
  void drop(id t) {
    if (t != none && --refs_[static_cast<std::size_t>(t)] == 0)
      live_ -= sizes_[static_cast<std::size_t>(t)];
  }
  void drop_all(std::vector<id>& ts) {
    for (auto t : ts)
      drop(t);
    ts.clear();
  }
  [[nodiscard]] std::int64_t peak() const { return peak_; }

private:
  std::vector<std::int64_t> sizes_;
  std::vector<int> refs_;
  std::int64_t live_ = 0;
  std::int64_t peak_ = 0;
};

/// Elements of a batch of `b` samples of `shape`.
std::int64_t batch_elements(std::int64_t b, const sample_shape& shape) {
  return b * elements(shape);
}

/// The elements of a conv's batch in oneDNN's blocked layout: channels padded to `block`.
std::int64_t blocked(std::int64_t b, const sample_shape& shape, std::int64_t block) {
  auto c = shape[0];
  return b * ((c + block - 1) / block * block) * (elements(shape) / c);
}

/// What the loop's step and evaluation hold besides the persistent state, layer by layer: the
/// rules of libtorch 1.13's CPU kernels and autograd (what each backward function saves, what it
/// allocates), measured with the counting allocator (docs/training-memory.md, "The static estimate").
class pass_counter {
public:
  pass_counter(const std::vector<layer_plan>& layers, bool half, bool cross_entropy,
               bool classification)
    : layers_(layers), half_(half), cross_entropy_(cross_entropy), classification_(classification) {}

  /// The peak of one training step at batch `b`: the batch, the forward pass and what autograd
  /// keeps, the loss, the backward pass, then the optimizer's temporaries.
  std::int64_t training_step(std::int64_t b, std::int64_t optimizer_temporaries) {
    pass p;
    auto x = p.t.alloc(batch_elements(b, layers_.front().in) * float_bytes);
    auto y = p.t.alloc(target_bytes(b));
    p.chain = p.t.hold(x);
    std::vector<kept> layers(layers_.size());
    for (std::size_t i = 0; i < layers_.size(); ++i)
      forward(p, layers_[i], layers[i], b);
    auto g = loss_gradient(p, b);
    for (auto i = layers_.size(); i-- > 0;) {
      g = backward(p.t, layers_[i], layers[i], g, b);
      if (!layers[i].grad_in)
        break;  // nothing before this layer needs a gradient
    }
    p.t.drop(g);
    p.t.spike(optimizer_temporaries);  // the optimizer steps while the batch is still held
    p.t.drop(x);
    p.t.drop(y);
    return p.t.peak();
  }

  /// The peak of one validation batch of `b`: under no_grad, over a view of the dataset (not
  /// copied), each layer's output freed once the next one has it.
  std::int64_t evaluation(std::int64_t b) {
    timeline t;
    auto chain = timeline::none;
    std::int64_t chain_size = float_bytes;
    std::vector<timeline::id> cache;
    for (const auto& l : layers_) {
      auto e_in = batch_elements(b, l.in), e_out = batch_elements(b, l.out);
      timeline::id out = timeline::none;
      if (l.type == "Flatten" || l.type == "Dropout") {
        out = t.hold(chain);
      } else if (l.type == "Linear" || l.type == "Conv2d") {
        auto used = layer_input(t, chain, chain_size, e_in);
        if (half_)
          cache.push_back(t.alloc(l.cast_parameters * half_bytes));
        out = t.alloc(e_out * (half_ ? half_bytes : float_bytes));
        if (l.type == "Conv2d")
          t.spike(conv_forward_scratch(l, b));
        t.drop(used);
      } else {
        out = t.alloc(e_out * chain_size + (l.type == "LayerNorm" ? norm_statistics(l, b) : 0));
      }
      t.drop(chain);
      chain = out;
    }
    auto outputs = batch_elements(b, layers_.back().out);
    chain = output_in_float(t, chain, chain_size, outputs);
    t.drop_all(cache);
    auto loss = t.alloc(outputs * float_bytes);  // log_softmax, or mse's difference
    t.drop(loss);
    if (classification_)
      t.spike(b * (index_bytes + 1));  // argmax and the comparison with the labels
    t.drop(chain);
    return t.peak();
  }

private:
  /// A pass under way: the tensors held, the one flowing from layer to layer and its element
  /// size, whether it requires grad, and autocast's weight copies until the forward pass ends.
  struct pass {
    timeline t;
    timeline::id chain = timeline::none;
    std::int64_t chain_size = float_bytes;
    bool grad = false;
    std::vector<timeline::id> cache;
  };

  /// What one layer keeps for its backward, and the element sizes it computed in.
  struct kept {
    std::vector<timeline::id> saved;
    std::int64_t in_size = float_bytes;
    std::int64_t out_size = float_bytes;
    bool grad_in = false;  // whether its input requires grad
  };

  /// One layer's forward pass in training: its output, what autograd keeps, its temporaries.
  void forward(pass& p, const layer_plan& l, kept& k, std::int64_t b) const {
    auto& t = p.t;
    k.grad_in = p.grad;
    auto e_in = batch_elements(b, l.in), e_out = batch_elements(b, l.out);
    timeline::id out = timeline::none;
    if (l.type == "Linear" || l.type == "Conv2d") {
      auto used = layer_input(t, p.chain, p.chain_size, e_in);
      k.in_size = p.chain_size;
      if (half_) {
        // Linear keeps the weight's copy only to compute its input's gradient; Conv2d keeps both.
        auto copy = t.alloc(l.cast_parameters * half_bytes);
        p.cache.push_back(copy);
        if (k.grad_in || l.type == "Conv2d")
          k.saved.push_back(t.hold(copy));
      }
      k.out_size = half_ ? half_bytes : float_bytes;
      out = t.alloc(e_out * k.out_size);
      if (l.type == "Conv2d")
        t.spike(conv_forward_scratch(l, b));
      k.saved.push_back(used);
      p.grad = true;
    } else {
      k.in_size = k.out_size = p.chain_size;
      if (l.type == "Flatten" || (l.type == "Dropout" && l.p == 0)) {
        out = t.hold(p.chain);
      } else if (l.type == "Dropout") {
        auto keep = t.alloc(e_in * p.chain_size);
        auto product = t.alloc(e_in * p.chain_size);
        out = t.alloc(e_in * p.chain_size);
        t.drop(product);
        if (p.grad)
          k.saved.push_back(keep);
        else
          t.drop(keep);
      } else if (l.type == "MaxPool2d") {
        out = t.alloc(e_out * p.chain_size);
        if (p.grad) {
          k.saved.push_back(t.hold(p.chain));
          k.saved.push_back(t.alloc(e_out * index_bytes));
        }
      } else if (l.type == "BatchNorm1d" || l.type == "BatchNorm2d" || l.type == "LayerNorm") {
        out = t.alloc(e_out * p.chain_size);
        k.saved.push_back(t.hold(p.chain));
        k.saved.push_back(t.alloc(norm_statistics(l, b)));
        p.grad = true;
      } else {  // ReLU, Tanh (save their output), GELU (saves its input)
        out = t.alloc(e_out * p.chain_size);
        if (p.grad)
          k.saved.push_back(t.hold(l.type == "GELU" ? p.chain : out));
      }
    }
    t.drop(p.chain);
    p.chain = out;
  }

  /// The loss after the forward pass (the output back in fp32, log_softmax kept for backward or
  /// mse's difference), then its gradient as it reaches the last layer.
  timeline::id loss_gradient(pass& p, std::int64_t b) const {
    auto& t = p.t;
    auto outputs = batch_elements(b, layers_.back().out);
    auto output = output_in_float(t, p.chain, p.chain_size, outputs);
    p.chain = timeline::none;
    std::vector<timeline::id> loss_saved;
    if (cross_entropy_) {
      loss_saved.push_back(t.alloc(outputs * float_bytes));
      t.drop(output);
    } else {
      t.spike(outputs * float_bytes);
      loss_saved.push_back(output);  // mse keeps the output
    }
    t.drop_all(p.cache);
    auto g = t.alloc(outputs * float_bytes);
    if (cross_entropy_) {
      auto g2 = t.alloc(outputs * float_bytes);
      t.drop(g);
      g = g2;
    }
    t.drop_all(loss_saved);
    if (p.chain_size == half_bytes) {
      auto g2 = t.alloc(outputs * half_bytes);
      t.drop(g);
      g = g2;
    }
    return g;
  }

  /// One layer's backward pass from its output's gradient `g`: its input's gradient (none when
  /// its input needs none), its weights' gradients and temporaries; what it kept is let go.
  static timeline::id backward(timeline& t, const layer_plan& l, kept& k, timeline::id g,
                               std::int64_t b) {
    auto e_in = batch_elements(b, l.in);
    auto gin = timeline::none;
    std::vector<timeline::id> temporaries;
    if (l.type == "Linear" || l.type == "Conv2d") {
      if (l.type == "Conv2d")
        temporaries.push_back(t.alloc(blocked(b, l.out, 16) * k.out_size));
      if (k.grad_in) {
        if (l.type == "Conv2d")
          temporaries.push_back(t.alloc(blocked(b, l.in, 8) * k.in_size));
        gin = t.alloc(e_in * k.in_size);
      }
      temporaries.push_back(t.alloc(l.cast_parameters * k.out_size));
    } else if (l.type == "Flatten" || (l.type == "Dropout" && l.p == 0)) {
      gin = t.hold(g);
    } else if (l.type == "Dropout") {
      // Two backward functions: the division by 1 - p, then the product with the mask; each lets
      // go of its incoming gradient before the next one runs.
      auto divided = t.alloc(e_in * k.in_size);
      t.drop(g);
      g = timeline::none;
      gin = t.alloc(e_in * k.in_size);
      t.drop(divided);
    } else if (l.type == "BatchNorm1d" || l.type == "BatchNorm2d") {
      if (k.grad_in)
        gin = t.alloc(e_in * k.in_size);
      t.spike(e_in * k.in_size);
    } else if (k.grad_in) {  // LayerNorm, MaxPool2d, the activations
      gin = t.alloc(e_in * k.in_size);
    }
    t.drop(g);
    t.drop_all(k.saved);
    // Under autocast the weights' gradients come back to fp32 once the layer has let go of what
    // it kept, before the next layer's backward runs.
    if (k.out_size == half_bytes && l.cast_parameters > 0)
      t.spike(l.cast_parameters * float_bytes);
    t.drop_all(temporaries);
    return gin;
  }

  /// What a Linear or Conv2d computes on, held: the chain's tensor, or under autocast its 16-bit
  /// copy when the chain is still fp32 (the chain is 16-bit from there on).
  timeline::id layer_input(timeline& t, timeline::id chain, std::int64_t& chain_size,
                           std::int64_t elements_in) const {
    if (!half_ || chain_size == half_bytes)
      return t.hold(chain);
    chain_size = half_bytes;
    return t.alloc(elements_in * half_bytes);
  }

  /// The model's output as the loss takes it: cast back to fp32 when it is 16-bit.
  static timeline::id output_in_float(timeline& t, timeline::id chain, std::int64_t chain_size,
                                      std::int64_t outputs) {
    if (chain_size != half_bytes)
      return chain;
    auto full = t.alloc(outputs * float_bytes);
    t.drop(chain);
    return full;
  }

  [[nodiscard]] std::int64_t target_bytes(std::int64_t b) const {
    if (classification_)
      return b * index_bytes;
    return batch_elements(b, layers_.back().out) * float_bytes;
  }

  /// oneDNN's convolution writes its output in a blocked layout (channels padded to 16), then
  /// copies it to the dense output; under bf16 autocast the blocked buffer is as large as fp32's
  /// once the layer's input has channels of its own.
  [[nodiscard]] std::int64_t conv_forward_scratch(const layer_plan& l, std::int64_t b) const {
    return blocked(b, l.out, 16) * (!half_ || l.in[0] >= 8 ? float_bytes : half_bytes);
  }

  /// BatchNorm's per-channel mean and inverse deviation; LayerNorm's per-row mean and rstd.
  [[nodiscard]] static std::int64_t norm_statistics(const layer_plan& l, std::int64_t b) {
    if (l.type == "LayerNorm")
      return 2 * b * (elements(l.in) / l.in.back()) * float_bytes;
    return 2 * l.in[0] * float_bytes;
  }

  const std::vector<layer_plan>& layers_;
  bool half_;
  bool cross_entropy_;
  bool classification_;
};

/// The optimizer state's bytes per trainable parameter, and what it keeps.
struct optimizer_costs {
  std::int64_t state_bytes = 0;
  std::string name;
  /// Temporaries of one step, per element of the largest parameter tensor.
  std::int64_t temporaries = 0;
};

optimizer_costs optimizer_costs_of(const graph_node& opt) {
  auto name = opt.params["name"].get<std::string>();
  auto momentum = opt.params["momentum"].get<double>() > 0;
  auto decay = opt.params["weight_decay"].get<double>() > 0 ? 1 : 0;
  auto kind = name == "adam"      ? optimizer_kind::adam
              : name == "adamw"   ? optimizer_kind::adamw
              : name == "rmsprop" ? (momentum ? optimizer_kind::rmsprop_momentum : optimizer_kind::rmsprop)
              : momentum          ? optimizer_kind::sgd_momentum
                                  : optimizer_kind::sgd;
  // One step's temporaries: Adam computes sqrt(v) and its quotient (and the decayed gradient),
  // AdamW decays the weights in place, RMSprop one, SGD the decayed gradient only.
  auto temporaries = kind == optimizer_kind::adam    ? 2 + decay
                     : kind == optimizer_kind::adamw ? 2
                     : name == "rmsprop"             ? 1 + decay
                                                     : decay;
  auto state = state_of(kind);
  return {state_bytes_per_parameter(state), state.name + ": " + state.kept, temporaries};
}

memory_estimate estimate_loop(const graph_index& index, const graph_node& loop,
                              const estimate_options& options) {
  memory_estimate e;
  e.loop_node = loop.id;
  e.cards = options.cards;
  e.device = options.device.empty() ? loop.params["device"].get<std::string>() : options.device;
  bool cuda = e.device.rfind("cuda", 0) == 0;
  // The precision the loop would train in there, assuming a card with bf16 (Ampere and newer).
  auto ran = resolve_precision(loop.params["precision"].get<std::string>(), e.device, true).ran;
  e.precision = to_string(ran);
  bool half = ran != precision::fp32;

  const auto& model = model_node(index, loop);
  const auto* loader = index.feeding(loop, "dataloader");
  if (loader == nullptr)
    throw rough_reason{"TrainingLoop '" + loop.id + "' has no dataloader: no batch size"};
  auto train = loader_facts(index, *loader);
  std::optional<batch_facts> val;
  if (const auto* v = index.feeding(loop, "val_dataloader"))
    val = loader_facts(index, *v);

  // The input shape: the Model's input_shape, else the dataset's, as the Model node decides.
  sample_shape input;
  for (const auto& d : model.params["input_shape"])
    input.push_back(d.get<std::int64_t>());
  const auto* model_data = index.feeding(model, "dataset");
  if (input.empty() && model_data != nullptr && model_data->type == "Dataset") {
    auto facts = dataset_facts(*model_data);
    if (!facts.shape)
      throw rough_reason{"Dataset '" + model_data->id + "' reads "
                         + (model_data->params["name"] == "csv"
                              ? "a CSV file whose columns the graph does not give"
                              : "Fashion-MNIST files from a root of its own, whose image size the "
                                "graph does not give")
                         + "; set the Model's input_shape"};
    input = *facts.shape;
  }
  if (input.empty())
    throw rough_reason{"Model '" + model.id + "' has no input shape: connect its dataset input or "
                       "set its input_shape"};
  auto planned = plan_layers(model.params["layers"], input);
  if (auto* error = std::get_if<std::string>(&planned))
    throw rough_reason{"Model '" + model.id + "': " + *error};
  const auto& layers = std::get<std::vector<layer_plan>>(planned);
  if (layers.size() > max_layers)
    throw rough_reason{"Model '" + model.id + "' has " + thousands(static_cast<std::int64_t>(layers.size()))
                       + " layers; the estimate counts at most " + thousands(max_layers)};
  auto biggest = std::max(train.batch, val ? val->batch : 0);
  for (const auto& l : layers)
    if (biggest * 16 > max_batch_elements / std::max(elements(l.in), elements(l.out)))
      throw rough_reason{"Model '" + model.id + "': a batch of " + std::to_string(biggest)
                         + " through a layer of " + shape_text(l.out) + " is too large to count "
                         "(more than 2^44 elements)"};

  std::int64_t params = 0, cast = 0, floats = 0, int64s = 0, largest = 0;
  for (const auto& l : layers) {
    params += l.parameters;
    cast += l.cast_parameters;
    floats += l.buffer_floats;
    int64s += l.buffer_int64s;
    auto weight = l.parameters - (l.bias && l.cast_parameters > 0 ? l.out_features : 0);
    largest = std::max(largest, weight);
  }
  if (params > max_elements)
    throw rough_reason{"Model '" + model.id + "' has more than 2^40 parameters: too large to count"};
  // Frozen parameters and LoRA layers' own weights get no gradient and no optimizer state; the
  // adapters add parameters that do.
  auto counts = count_parameters(layers, model.params["freeze"], read_lora(model.params["lora"], model.params["layers"]));
  params = counts.all;
  auto trainable = counts.trainable;
  largest = counts.largest_trainable;
  e.parameters = params;
  e.trainable_parameters = trainable;
  const auto* opt_node = index.feeding(loop, "optimizer");
  if (opt_node == nullptr || opt_node->type != "Optimizer")
    throw rough_reason{"TrainingLoop '" + loop.id + "' has no Optimizer node, so its state is unknown"};
  auto opt = optimizer_costs_of(*opt_node);
  const auto* loss_node = index.feeding(loop, "loss_fn");
  bool cross_entropy = loss_node == nullptr || loss_node->params.value("kind", "cross_entropy") == "cross_entropy";

  e.batch_size = train.batch;
  pass_counter counter{layers, half, cross_entropy, train.data.classification};
  auto step = counter.training_step(train.batch, opt.temporaries * largest * float_bytes);
  auto working = step;
  e.activations_from = "training step";
  if (val) {
    e.eval_batch_size = val->batch;
    auto eval = counter.evaluation(val->batch);
    if (eval > step) {
      working = eval;
      e.activations_from = "evaluation pass";
    }
  }
  auto copies = half ? cast * half_bytes : 0;

  auto add = [&](std::string name, std::int64_t bytes, std::string detail, bool cuda_only = false) {
    e.terms.push_back({std::move(name), bytes, std::move(detail), cuda_only});
  };
  add("parameters", params * float_bytes, thousands(params) + " parameters x 4 bytes");
  if (floats + int64s > 0)
    add("buffers", floats * float_bytes + int64s * index_bytes,
        "BatchNorm's running statistics: " + thousands(floats) + " x 4 bytes, "
          + thousands(int64s) + " x 8 bytes");
  add("gradients", trainable * float_bytes, thousands(trainable) + " trainable parameters x 4 bytes");
  add("optimizer_state", trainable * opt.state_bytes,
      thousands(trainable) + " x " + std::to_string(opt.state_bytes) + " bytes (" + opt.name + ")");
  if (half)
    add("autocast_copies", copies,
        thousands(cast) + " Linear and Conv2d weights x 2 bytes (" + e.precision + " autocast)");
  std::string what = "one training step at batch " + std::to_string(train.batch);
  if (val)
    what += " or one evaluation pass at batch " + std::to_string(val->batch);
  add("activations", std::max<std::int64_t>(0, working - copies),
      (val ? "the larger of " + what + ": the " + e.activations_from : what)
        + (e.activations_from == "training step"
             ? " (the batch, what autograd keeps, the backward and optimizer temporaries)"
             : " (each layer's output until the next layer has taken it)"));
  if (cuda) {
    std::int64_t sum = 0;
    for (const auto& t : e.terms)
      sum += t.bytes;
    add("allocator_reserve", static_cast<std::int64_t>(static_cast<double>(sum) * cuda_allocator_reserve),
        "20% of the above for the CUDA caching allocator's reserve", true);
    add("cuda_workspace", cuda_workspace_bytes, "the CUDA libraries' workspaces (cuBLAS, cuDNN)", true);
  }
  return e;
}

} // namespace

std::optional<precision> parse_precision(const std::string& word) {
  for (auto p : {precision::fp32, precision::bf16, precision::fp16})
    if (word == to_string(p))
      return p;
  return std::nullopt;
}

optimizer_state state_of(optimizer_kind kind) {
  switch (kind) {
    case optimizer_kind::sgd: return {0, false, "plain SGD", "no state"};
    case optimizer_kind::sgd_momentum: return {1, false, "SGD with momentum", "momentum_buffer"};
    case optimizer_kind::adam: return {2, false, "Adam", "exp_avg and exp_avg_sq"};
    case optimizer_kind::adamw: return {2, false, "AdamW", "exp_avg and exp_avg_sq"};
    case optimizer_kind::rmsprop: return {1, false, "RMSprop", "square_avg"};
    case optimizer_kind::rmsprop_momentum:
      return {2, false, "RMSprop with momentum", "square_avg and momentum_buffer"};
    case optimizer_kind::adam8bit: return {2, true, "8-bit Adam", "exp_avg and exp_avg_sq in 8 bits"};
  }
  return {};
}

const char* to_string(optimizer_kind kind) {
  switch (kind) {
    case optimizer_kind::sgd: return "sgd";
    case optimizer_kind::sgd_momentum: return "sgd_momentum";
    case optimizer_kind::adam: return "adam";
    case optimizer_kind::adamw: return "adamw";
    case optimizer_kind::rmsprop: return "rmsprop";
    case optimizer_kind::rmsprop_momentum: return "rmsprop_momentum";
    case optimizer_kind::adam8bit: return "adam8bit";
  }
  return "adamw";
}

std::optional<optimizer_kind> parse_optimizer(const std::string& word) {
  for (auto kind : all_optimizers)
    if (word == to_string(kind))
      return kind;
  return std::nullopt;
}

std::string optimizer_words() {
  std::string words;
  for (auto kind : all_optimizers)
    words += (words.empty() ? "" : ", ") + std::string{to_string(kind)};
  return words;
}

std::int64_t state_bytes_per_parameter(const optimizer_state& state, precision states) {
  return state.copies * (state.eight_bit ? 1 : bytes_per_number(states));
}

std::string thousands(std::int64_t n) {
  auto digits = std::to_string(n);
  for (auto i = static_cast<int>(digits.size()) - 3; i > (n < 0 ? 1 : 0); i -= 3)
    digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

std::int64_t memory_estimate::total() const {
  if (is_rough())
    return 0;
  std::int64_t sum = 0;
  for (const auto& t : terms)
    sum += t.bytes;
  return sum;
}

std::int64_t memory_estimate::total_without_cuda() const {
  if (is_rough())
    return 0;
  std::int64_t sum = 0;
  for (const auto& t : terms)
    sum += t.cuda_only ? 0 : t.bytes;
  return sum;
}

memory_estimate estimate_memory(const validated_graph& graph, const estimate_options& options) {
  graph_index index{graph.g};
  std::optional<memory_estimate> best;
  for (const auto& n : graph.g.nodes) {
    if (n.type != "TrainingLoop")
      continue;
    memory_estimate e;
    try {
      e = estimate_loop(index, n, options);
    } catch (const rough_reason& r) {
      e.loop_node = n.id;
      e.cards = options.cards;
      e.device = options.device.empty() ? n.params["device"].get<std::string>() : options.device;
      e.rough = r.text;
      return e;  // one loop it cannot count makes the whole graph's estimate rough
    }
    if (!best || e.total() > best->total())
      best = std::move(e);
  }
  if (best)
    return *best;
  memory_estimate none;
  none.cards = options.cards;
  none.device = options.device;
  none.rough = "the graph has no TrainingLoop: the estimate counts a training run";
  return none;
}

nlohmann::json to_json(const memory_estimate& e) {
  nlohmann::json j{{"estimate", true},
                   {"memory_source", "estimate"},
                   {"loop", e.loop_node},
                   {"device", e.device},
                   {"cards", e.cards}};
  if (e.is_rough()) {
    j["rough"] = e.rough;
    j["total_bytes"] = nullptr;
    return j;
  }
  j["rough"] = nullptr;
  j["precision"] = e.precision;
  j["parameters"] = e.parameters;
  j["trainable_parameters"] = e.trainable_parameters;
  j["batch_size"] = e.batch_size;
  j["eval_batch_size"] = e.eval_batch_size;
  j["activations_from"] = e.activations_from;
  j["terms"] = to_json(e.terms);
  j["total_bytes"] = e.total();
  j["total"] = devices::format_bytes(e.total());
  j["per_card_bytes"] = e.total();
  j["per_card_note"] = "without DDP each card of a device set holds a whole run, so the figure is "
                       "per card";
  return j;
}

nlohmann::json to_json(const std::vector<estimate_term>& terms) {
  auto j = nlohmann::json::array();
  for (const auto& t : terms)
    j.push_back({{"name", t.name},
                 {"bytes", t.bytes},
                 {"human", devices::format_bytes(t.bytes)},
                 {"detail", t.detail},
                 {"cuda_only", t.cuda_only}});
  return j;
}

} // namespace cdui::runtime
