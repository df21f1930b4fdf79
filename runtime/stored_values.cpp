#include "runtime/stored_values.hpp"

#include <memory>

#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>

#include "messages/json_text.hpp"
#include "runtime/nodes/values.hpp"
#include "runtime/tensor_bytes.hpp"
#include "storage/home.hpp"

namespace cdui::runtime {

namespace {

using namespace nodes;

nlohmann::json tensor_json(const at::Tensor& t) {
  if (!t.defined())
    return nullptr;
  return {{"shape", t.sizes().vec()}, {"dtype", std::string{t.dtype().name()}}};
}

template <class T>
const std::shared_ptr<T>* as(const value& v) {
  return std::any_cast<std::shared_ptr<T>>(&v);
}

} // namespace

nlohmann::json describe_value(const value& v) {
  nlohmann::json j;
  if (const auto* d = as<dataset_value>(v); d && *d) {
    const auto& x = **d;
    j = {{"kind", "dataset"},     {"name", x.name},          {"samples", x.size()},
         {"sample_shape", x.sample_shape}, {"inputs", tensor_json(x.inputs)},
         {"targets", tensor_json(x.targets)}};
    if (x.classification)
      j["classes"] = x.num_classes;
  } else if (const auto* l = as<loader_value>(v); l && *l) {
    const auto& x = **l;
    j = {{"kind", "dataloader"},
         {"batch_size", x.batch_size},
         {"shuffle", x.shuffle},
         {"batches", x.dataset ? x.num_batches() : 0}};
  } else if (const auto* m = as<model_value>(v); m && *m) {
    const auto& x = **m;
    j = {{"kind", "model"},
         {"parameters", x.parameter_count},
         {"input_shape", x.input_shape},
         {"output_shape", x.output_shape}};
    if (!x.module.is_empty()) {
      nlohmann::json layers = nlohmann::json::array();
      for (const auto& item : x.module->named_parameters())
        layers.push_back({{"name", item.key()}, {"shape", item.value().sizes().vec()}});
      j["tensors"] = layers;
    }
  } else if (const auto* s = as<optimizer_state_value>(v); s && *s) {
    j = {{"kind", "optimizer_state"}, {"optimizer", (*s)->optimizer}, {"epoch", (*s)->epoch}};
  } else if (const auto* g = as<grad_scaler_state_value>(v); g && *g) {
    j = {{"kind", "grad_scaler_state"}, {"enabled", (*g)->enabled}, {"scale", (*g)->scale}};
  } else if (const auto* metrics = as<nlohmann::json>(v); metrics && *metrics) {
    j = {{"kind", "metrics"}, {"values", **metrics}};
  } else if (const auto* loss = as<loss_value>(v); loss && *loss) {
    j = {{"kind", "loss_fn"}, {"loss", (*loss)->kind}};
  } else if (const auto* o = as<optimizer_value>(v); o && *o) {
    j = {{"kind", "optimizer"}, {"optimizer", (*o)->name}, {"lr", (*o)->lr}};
  } else if (const auto* sc = as<scheduler_value>(v); sc && *sc) {
    j = {{"kind", "scheduler"}, {"scheduler", (*sc)->kind}};
  } else {
    j = {{"kind", "value"}};
  }
  tensor_bytes_counter counter;
  counter.add_value(v);
  j["bytes"] = counter.bytes();
  return j;
}

nlohmann::json describe_values(const port_values& values) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [port, v] : values)
    j[port] = describe_value(v);
  return j;
}

std::string restore_weights(const value& fresh, const value& stored) {
  const auto* to = as<model_value>(fresh);
  const auto* from = as<model_value>(stored);
  if (!to || !*to || !from || !*from || (*to)->module.is_empty() || (*from)->module.is_empty())
    return "the stored value is not a model";
  auto target = (*to)->module->named_parameters();
  auto source = (*from)->module->named_parameters();
  auto target_buffers = (*to)->module->named_buffers();
  auto source_buffers = (*from)->module->named_buffers();
  if (target.size() != source.size() || target_buffers.size() != source_buffers.size())
    return "the stored model has other layers";
  auto check = [](const auto& a, const auto& b) -> std::string {
    for (const auto& item : a) {
      const auto* other = b.find(item.key());
      if (other == nullptr || other->sizes() != item.value().sizes())
        return "the stored model's " + item.key() + " has another shape";
    }
    return "";
  };
  if (auto why = check(target, source); !why.empty())
    return why;
  if (auto why = check(target_buffers, source_buffers); !why.empty())
    return why;
  c10::AutoGradMode no_grad{false};
  for (auto& item : target)
    item.value().copy_(*source.find(item.key()));
  for (auto& item : target_buffers)
    item.value().copy_(*source_buffers.find(item.key()));
  return "";
}

namespace {

class outputs_file_store : public run_stores {
public:
  explicit outputs_file_store(std::filesystem::path file) : file_(std::move(file)) {}
  std::optional<cached_node> cached(const std::string&) override { return std::nullopt; }
  void cache(const std::string&, cached_node, std::int64_t) override {}
  void forget(const std::string&) override {}
  std::optional<value> persisted_model(const std::string&) override { return std::nullopt; }
  void persist_model(const std::string&, value, std::int64_t) override {}
  void record(std::map<std::string, port_values> outputs, std::int64_t) override {
    nlohmann::json nodes = nlohmann::json::object();
    for (const auto& [node, values] : outputs)
      nodes[node] = describe_values(values);
    storage::write_file_atomic(file_, json_text(nodes) + "\n");
  }

private:
  std::filesystem::path file_;
};

} // namespace

std::shared_ptr<run_stores> outputs_file(std::filesystem::path file) {
  return std::make_shared<outputs_file_store>(std::move(file));
}

} // namespace cdui::runtime
