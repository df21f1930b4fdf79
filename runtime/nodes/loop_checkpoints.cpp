#include "runtime/nodes/loop_checkpoints.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include <torch/torch.h>

#include "messages/text.hpp"
#include "runtime/file_access.hpp"
#include "runtime/node_call.hpp"
#include "runtime/nodes/checkpoint_archive.hpp"

namespace cdui::runtime::nodes {

namespace fs = std::filesystem;

namespace {

/// The start of the names of node `node`'s checkpoints: its id, with what a file name cannot hold
/// replaced.
std::string name_prefix(const std::string& node) {
  std::string safe;
  for (char c : node)
    safe += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.') ? c : '_';
  return safe + "-step";
}

/// A checkpoint file of the node in a folder: its steps and whether a Stop wrote it.
struct found {
  fs::path path;
  std::int64_t steps = 0;
  bool interrupt = false;
};

/// The node's checkpoints in `dir`, oldest first (an interrupt checkpoint after a periodic one of
/// the same step).
std::vector<found> checkpoints_in(const fs::path& dir, const std::string& node) {
  std::vector<found> all;
  auto prefix = name_prefix(node);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator{dir, ec}) {
    auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + 4 || name.substr(name.size() - 3) != ".pt")
      continue;
    auto rest = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    bool interrupt = rest.size() > 10 && rest.substr(rest.size() - 10) == "-interrupt";
    if (interrupt)
      rest.resize(rest.size() - 10);
    if (rest.empty() || !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    all.push_back({entry.path(), std::stoll(rest), interrupt});
  }
  std::sort(all.begin(), all.end(), [](const found& a, const found& b) {
    return a.steps != b.steps ? a.steps < b.steps : a.interrupt < b.interrupt;
  });
  return all;
}

/// Removes the oldest periodic checkpoints of the node beyond the newest `keep`.
void prune(const fs::path& dir, const std::string& node, std::int64_t keep) {
  std::vector<found> periodic;
  for (auto& f : checkpoints_in(dir, node))
    if (!f.interrupt)
      periodic.push_back(std::move(f));
  std::error_code ec;
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < periodic.size(); ++i)
    fs::remove(periodic[i].path, ec);
}

} // namespace

void write_loop_checkpoint(node_call& call, torch::nn::Module& model, const loop_checkpoint& c, bool interrupt,
                           std::int64_t keep) {
  torch::serialize::OutputArchive archive;
  write_checkpoint(archive, model, &c.optimizer, &c.scaler);
  const auto& at = c.at;
  archive.write("loop_node", c10::IValue{c.node});
  archive.write("loop_at", torch::tensor({at.epoch, at.epoch_batch, at.steps, at.batches, at.epochs_run,
                                          at.val_batches, at.epoch_samples, c.epoch_offset},
                                         torch::kInt64));
  archive.write("loop_losses", torch::tensor({at.epoch_loss_sum, at.last_train_loss, at.last_val_loss,
                                              at.last_val_accuracy},
                                             torch::kDouble));
  archive.write("loop_epoch_rng", c.epoch_rng);
  archive.write("loop_rng", c.rng);
  std::ostringstream out;
  archive.save_to(out);
  auto name = name_prefix(c.node) + std::to_string(at.steps) + (interrupt ? "-interrupt" : "") + ".pt";
  auto written = file_access::for_run(call.run()).write("checkpoint_every", name, out.str());
  if (!written.allowed())
    throw node_error(written.refusal);
  if (!interrupt && keep > 0)
    prune(written.real.parent_path(), c.node, keep);
  call.emit("checkpoint", {{"kind", interrupt ? "interrupt" : "periodic"},
                           {"path", text::to_utf8(written.shown.string())},
                           {"epoch", c.epoch_offset + at.epoch},
                           {"step", at.steps}});
}

std::optional<loop_checkpoint> read_loop_checkpoint(node_call& call, torch::nn::Module& model) {
  const auto& from = call.run().resume_from;
  if (from.empty())
    return std::nullopt;
  const auto& node = call.node().id;
  auto who = "Node " + node + " (TrainingLoop): ";
  auto file = from;
  std::error_code ec;
  if (fs::is_directory(from, ec)) {
    auto dir = fs::is_directory(from / "checkpoints", ec) ? from / "checkpoints" : from;
    auto all = checkpoints_in(dir, node);
    if (all.empty()) {
      call.warn("resume_not_found", who + text::to_utf8(dir.string()) + " holds no checkpoint of it, so it "
                                    "trains from its start");
      return std::nullopt;
    }
    file = all.back().path;
  }
  auto in = file_access::for_run(call.run()).open(file_use::checkpoint, "resume_from", file.string());
  if (!in.is_open())
    throw node_error(in.refusal());
  torch::serialize::InputArchive archive;
  load_archive(archive, in.stream(), in.quoted());
  c10::IValue saved_node;
  at::Tensor at, losses;
  loop_checkpoint c;
  if (!archive.try_read("loop_node", saved_node) || !saved_node.isString() || !archive.try_read("loop_at", at)
      || !archive.try_read("loop_losses", losses) || !archive.try_read("loop_epoch_rng", c.epoch_rng)
      || !archive.try_read("loop_rng", c.rng) || at.numel() != 8 || losses.numel() != 4)
    throw node_error(in.quoted() + " is not a checkpoint a TrainingLoop wrote, so the run cannot resume from "
                     "it (a CheckpointSaver's file loads with a CheckpointLoader)");
  if (saved_node.toStringRef() != node) {
    call.warn("resume_not_found", who + in.quoted() + " is a checkpoint of TrainingLoop '"
                                    + text::to_utf8(saved_node.toStringRef()) + "', so this loop trains from its start");
    return std::nullopt;
  }
  read_checkpoint(archive, in.quoted(), model, c.optimizer, c.scaler);
  c.node = node;
  const auto* i = at.data_ptr<std::int64_t>();
  const auto* d = losses.data_ptr<double>();
  c.at.epoch = i[0];
  c.at.epoch_batch = i[1];
  c.at.steps = i[2];
  c.at.batches = i[3];
  c.at.epochs_run = i[4];
  c.at.val_batches = i[5];
  c.at.epoch_samples = i[6];
  c.epoch_offset = i[7];
  c.at.epoch_loss_sum = d[0];
  c.at.last_train_loss = d[1];
  c.at.last_val_loss = d[2];
  c.at.last_val_accuracy = d[3];
  return c;
}

} // namespace cdui::runtime::nodes
