// ModelSaver, CheckpointSaver and CheckpointLoader: torch archives written to a temp name and renamed,
// where runtime/file_access.hpp allows.
#include <cstring>
#include <sstream>

#include <torch/torch.h>

#include "messages/text.hpp"
#include "runtime/file_access.hpp"
#include "runtime/node_call.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/checkpoint_archive.hpp"
#include "runtime/nodes/lora.hpp"
#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

namespace {

/// Writes the archive where param 'path' says, if the rules allow it; the path written.
std::string write_archive(node_call& call, torch::serialize::OutputArchive& archive) {
  std::ostringstream out;
  archive.save_to(out);
  auto written = file_access::for_run(call.run()).write("path", call.string_param("path"), out.str());
  if (!written.allowed())
    throw node_error(written.refusal);
  return text::to_utf8(written.shown.string());
}

port_values run_model_saver(node_call& call) {
  auto model = call.input<model_value>("model");
  torch::serialize::OutputArchive archive;
  bool merged = call.bool_param("merge_lora");
  if (merged)
    save_merged(model->module, archive);
  else
    model->module->save(archive);
  call.final_metrics = {{"path", write_archive(call, archive)}};
  if (merged)
    call.final_metrics["merged_lora"] = true;
  return {};
}

port_values run_checkpoint_saver(node_call& call) {
  auto model = call.input<model_value>("model");
  torch::serialize::OutputArchive archive;
  auto state = call.has_input("optimizer_state") ? call.input<optimizer_state_value>("optimizer_state") : nullptr;
  auto scaler = call.has_input("grad_scaler_state") ? call.input<grad_scaler_state_value>("grad_scaler_state") : nullptr;
  write_checkpoint(archive, *model->module, state.get(), scaler.get());
  call.final_metrics = {{"path", write_archive(call, archive)}, {"epoch", state ? state->epoch : 0}};
  return {};
}

port_values run_checkpoint_loader(node_call& call) {
  auto model = call.input<model_value>("model");
  auto file = file_access::for_run(call.run()).open(file_use::checkpoint, "path",
                                                    call.string_param("path"));
  if (!file.is_open())
    throw node_error(file.refusal());
  torch::serialize::InputArchive archive;
  load_archive(archive, file.stream(), file.quoted());
  auto state = std::make_shared<optimizer_state_value>();
  auto scaler = std::make_shared<grad_scaler_state_value>();
  read_checkpoint(archive, file.quoted(), *model->module, *state, *scaler);
  call.final_metrics = {{"path", text::to_utf8(file.decision().shown.string())},
                        {"epoch", state->epoch}};
  if (scaler->enabled)
    call.final_metrics["loss_scale"] = scaler->scale;
  return {{"model", make_value(std::move(model))},
          {"optimizer_state", make_value(std::move(state))},
          {"grad_scaler_state", make_value(std::move(scaler))}};
}

} // namespace

at::Tensor bytes_tensor(const std::string& bytes) {
  auto t = torch::empty({static_cast<std::int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

std::string tensor_bytes(const at::Tensor& t) {
  auto c = t.contiguous();
  return {static_cast<const char*>(c.data_ptr()), static_cast<std::size_t>(c.numel())};
}

namespace {

std::string shape_text(c10::IntArrayRef sizes) {
  std::string text = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i)
    text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

/// Throws unless every parameter and buffer of `module` is in `archive` with the same shape
/// (torch's loader would otherwise swap in tensors of another shape without a word).
void check_same_architecture(torch::nn::Module& module, torch::serialize::InputArchive& archive,
                             const std::string& prefix) {
  auto check = [&](const std::string& name, const at::Tensor& mine) {
    at::Tensor saved;
    if (!archive.try_read(name, saved, mine.is_floating_point() && !mine.requires_grad()))
      if (!archive.try_read(name, saved))
        throw node_error("the checkpoint has no " + prefix + name + "; it was saved from another "
                         "architecture");
    if (saved.sizes() != mine.sizes())
      throw node_error(prefix + name + " is " + shape_text(saved.sizes()) + " in the checkpoint but "
                       + shape_text(mine.sizes()) + " in this model; it was saved from another "
                       "architecture");
  };
  for (const auto& p : module.named_parameters(false))
    check(p.key(), p.value());
  for (const auto& b : module.named_buffers(false))
    check(b.key(), b.value());
  for (const auto& child : module.named_children()) {
    torch::serialize::InputArchive sub;
    if (!archive.try_read(child.key(), sub))
      throw node_error("the checkpoint has no layer " + prefix + child.key()
                       + "; it was saved from another architecture");
    check_same_architecture(*child.value(), sub, prefix + child.key() + ".");
  }
}

} // namespace

void write_checkpoint(torch::serialize::OutputArchive& archive, torch::nn::Module& model,
                      const optimizer_state_value* state, const grad_scaler_state_value* scaler) {
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  if (state != nullptr) {
    archive.write("optimizer", bytes_tensor(state->bytes));
    archive.write("optimizer_name", c10::IValue{state->optimizer});
  }
  archive.write("epoch", torch::tensor(state != nullptr ? state->epoch : 0, torch::kInt64));
  if (scaler != nullptr && scaler->enabled) {
    archive.write("grad_scaler_scale", torch::tensor(scaler->scale, torch::kFloat64));
    archive.write("grad_scaler_growth_tracker", torch::tensor(scaler->growth_tracker, torch::kInt64));
  }
}

void load_archive(torch::serialize::InputArchive& archive, std::istream& in, const std::string& path) {
  try {
    archive.load_from(in);
  } catch (const c10::Error& e) {
    throw node_error("cannot load " + path + " into this model: "
                     + text::to_utf8(std::string{e.what_without_backtrace()}.substr(0, 300)));
  }
}

void read_checkpoint(torch::serialize::InputArchive& archive, const std::string& path, torch::nn::Module& model,
                     optimizer_state_value& state, grad_scaler_state_value& scaler) {
  torch::serialize::InputArchive model_archive;
  try {
    if (!archive.try_read("model", model_archive))
      throw node_error(path + " is not a CheckpointSaver checkpoint (it has no model)");
    try {
      check_same_architecture(model, model_archive, "");
    } catch (const node_error& e) {
      throw node_error("cannot load " + path + " into this model: " + e.what());
    }
    model.load(model_archive);
  } catch (const c10::Error& e) {
    throw node_error("cannot load " + path + " into this model: "
                     + text::to_utf8(std::string{e.what_without_backtrace()}.substr(0, 300)));
  }
  at::Tensor optimizer_bytes, epoch;
  if (archive.try_read("optimizer", optimizer_bytes))
    state.bytes = tensor_bytes(optimizer_bytes);
  if (archive.try_read("epoch", epoch))
    state.epoch = epoch.item<std::int64_t>();
  c10::IValue optimizer_name;
  if (archive.try_read("optimizer_name", optimizer_name) && optimizer_name.isString())
    state.optimizer = optimizer_name.toStringRef();
  at::Tensor scale, tracker;
  if (archive.try_read("grad_scaler_scale", scale) && archive.try_read("grad_scaler_growth_tracker", tracker))
    scaler = {true, scale.item<double>(), tracker.item<std::int64_t>()};
}

void bind_checkpoint_nodes_runs(node_runs& runs) {
  runs["ModelSaver"] = run_model_saver;
  runs["CheckpointSaver"] = run_checkpoint_saver;
  runs["CheckpointLoader"] = run_checkpoint_loader;
}

} // namespace cdui::runtime::nodes
