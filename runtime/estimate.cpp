#include "runtime/estimate.hpp"

#include <algorithm>

#include "devices/memory.hpp"
#include "runtime/activation_passes.hpp"
#include "runtime/cuda_terms.hpp"
#include "runtime/estimate_inputs.hpp"
#include "runtime/kernel_memory.hpp"
#include "runtime/layer_shapes.hpp"
#include "runtime/precision.hpp"
#include "runtime/trainable.hpp"

namespace cdui::runtime {

namespace {

constexpr std::int64_t float_bytes = bytes_per_number(precision::fp32);
constexpr std::int64_t half_bytes = bytes_per_number(precision::bf16);
constexpr std::int64_t index_bytes = 8;  // int64 class labels and max-pool indices

/// The limits that keep the estimate's arithmetic in int64 and its time in microseconds: a
/// Model's layers, and the elements of one layer's batch (with room for 16 channels of padding).
constexpr std::size_t max_layers = 1'000;
constexpr std::int64_t max_batch_elements = std::int64_t{1} << 44;

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
  auto lora = read_lora(model.params["lora"], model.params["layers"]);
  const auto& freeze = model.params["freeze"];
  auto counts = count_parameters(layers, freeze, lora);
  std::vector<layer_training> training;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto name = layer_name(layers[i].type, i);
    auto own = parameter_names(layers[i].type, layers[i].bias);
    auto trains = [&](const std::string& p) {
      return std::find(own.begin(), own.end(), p) != own.end() && base_trains(freeze, lora, name, p);
    };
    training.push_back({trains("weight"), trains("bias"), lora.on() && lora.adapts(name) ? lora.rank : 0});
  }
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
  std::vector<forward_segment> segments;
  if (model.params["checkpoint_activations"].get<bool>())
    segments = checkpoint_plan(model.params["layers"], layers,
                               model.params["checkpoint_granularity"] == "full" ? recompute_granularity::full
                                                                                 : recompute_granularity::selective);
  pass_model passes{&layers, std::move(training), std::move(segments), half, cross_entropy,
                    train.data.classification};
  passes.conv_block = cuda ? conv_block(cpu_kernels::avx512_bf16) : conv_block(options.cpu);
  passes.one_thread = !cuda && loop.params["num_threads"].get<std::int64_t>() == 1;
  passes.cached_copies = ran == precision::fp16;
  passes.dropout_generator = std::any_of(layers.begin(), layers.end(), [](const auto& l) { return l.type == "Dropout"; });
  // On a CUDA card every tensor goes through the caching allocator's model: the model's, kept all
  // along, then the passes' on CUDA's kernels. CUDA's autocast caches its copies of the weights
  // that train for the forward pass in bf16 too.
  cuda_allocator_model allocator;
  if (cuda) {
    passes.cuda = &allocator;
    passes.cached_copies = half;
    for (auto bytes : persistent_tensors(layers, passes.training, opt.state_bytes / float_bytes))
      allocator.alloc(bytes);
  }
  step_temporaries optimizer_temporaries{opt.temporaries, largest * float_bytes};
  auto step = training_step_peak(passes, train.batch, optimizer_temporaries);
  auto working = step;
  e.activations_from = "training step";
  if (val) {
    e.eval_batch_size = val->batch;
    auto eval = evaluation_peak(passes, val->batch);
    if (eval > step) {
      working = eval;
      e.activations_from = "evaluation pass";
    }
  }
  // The steps after: the blocks cached by the first ones are taken again, or more segments are.
  for (int more = 0; cuda && more < 2; ++more)
    static_cast<void>(training_step_peak(passes, train.batch, optimizer_temporaries));
  // The copies are part of what the pass holds (a bf16 copy lives for its op or its backward, not
  // for the whole pass): the two terms split the pass's peak, so the total is never more than it.
  auto copies = half ? std::min(cast * half_bytes, working) : 0;

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
        thousands(cast) + " Linear and Conv2d weights x 2 bytes (" + e.precision + " autocast)"
          + (copies < cast * half_bytes ? ", as much of them as the pass holds at once" : ""));
  std::string what = "one training step at batch " + std::to_string(train.batch);
  if (val)
    what += " or one evaluation pass at batch " + std::to_string(val->batch);
  add("activations", working - copies,
      (val ? "the larger of " + what + ": the " + e.activations_from : what)
        + (e.activations_from == "training step"
             ? " (the batch, what autograd keeps, the backward and optimizer temporaries)"
             : " (each layer's output until the next layer has taken it)"));
  if (cuda) {
    std::int64_t sum = 0;
    for (const auto& t : e.terms)
      sum += t.bytes;
    add("allocator_reserve", std::max<std::int64_t>(0, allocator.reserved_peak() - sum),
        "what the CUDA caching allocator reserves past the above: blocks in 512 bytes, in segments of "
        "2 MiB (blocks to 1 MiB) and 20 MiB (to 10 MiB), kept when freed; "
          + thousands(allocator.segments()) + " segments of " + devices::format_bytes(allocator.reserved_peak())
          + " in all",
        true);
    add("cuda_workspace", cuda_workspace_bytes, "the CUDA libraries' workspaces (cuBLAS, cuDNN)", true);
  }
  if (half && !cuda && !measured_16_bit_kernels(options.cpu))
    e.rough = unmeasured_16_bit_kernels(loop.id, e.precision, e.device, options.cpu);
  return e;
}

} // namespace

std::optional<precision> parse_precision(const std::string& word) {
  for (auto p : {precision::fp32, precision::bf16, precision::fp16})
    if (word == to_string(p))
      return p;
  return std::nullopt;
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
    if (e.is_rough())
      return e;  // its terms are kept, for what they are worth; no figure
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
