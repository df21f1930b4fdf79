#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "messages/worker.hpp"

namespace cdui::policy {

/// One card of a run on a worker: the name the run knows it by (renumbered from 0 per kind) and
/// the worker's own facts about it.
struct launch_card {
  std::string in_run;       // cpu, sim:0, cuda:1: the run's name
  std::string worker_name;  // the worker's name: cpu, sim:2, cuda:3
  std::string kind;         // cpu | cuda | mps | sim
  std::string uuid;
  std::int64_t total_bytes = 0;
};

/// How a worker starts one run's process (docs/workers.md,
/// "What the run sees: its cards, renumbered"): the run sees only its own cards, numbered from 0
/// per kind in the order it was given them, whatever the worker calls them. Plain data, computed by
/// plan_launch(); the agent writes it into run.json and the process's environment.
struct launch_plan {
  /// In the run's order.
  std::vector<launch_card> cards;
  /// The run's device: its first card, by the run's name.
  std::string device;
  /// The run's names of its cards, in order (execution_facts' visible_devices).
  std::vector<std::string> visible_devices;
  /// Each run's name -> the worker's name (execution_facts' device_aliases).
  std::map<std::string, std::string> device_aliases;
  /// CUDA_VISIBLE_DEVICES: the worker's indexes of the run's CUDA cards, comma-separated, in the
  /// run's order (its cuda:0 is the first); empty without one.
  std::string cuda_visible_devices;
  /// CODEFYUI_SIM_DEVICES: the run's sim cards, comma-separated, in the run's order, each as
  /// SIZE=UUID (its size in bytes and the agent's card, so the run's memory counts on that card;
  /// see devices/sim_devices.hpp); empty without one.
  std::string sim_devices;

  /// The variables the run's process gets over the agent's environment (both always set, so that
  /// the agent's own values never leak into the run).
  [[nodiscard]] std::map<std::string, std::string> environment() const;
};

/// The plan for a run given `run_devices` (the worker's names, as assign_run carries them) on a
/// worker that offers `offers`; or why it cannot start there (no device, a device it does not
/// offer).
[[nodiscard]] std::variant<launch_plan, std::string> plan_launch(
  const std::vector<std::string>& run_devices, const std::vector<device_offer>& offers);

} // namespace cdui::policy
