#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "devices/device.hpp"

namespace cdui::devices {

/// One device this host offers to runs.
struct offered_device {
  std::string name;   // cpu, cuda:0, sim:1
  std::string label;  // what a listing shows
  /// Runs admitted at once: two on the CPU, one on an accelerator (seed 001, "Slots and limits").
  int slot_limit = 1;
  bool simulated = false;
  /// The card's memory in bytes; 0 when not known (the CPU).
  std::int64_t total_bytes = 0;
  std::string uuid;
};

/// The CPU admits two runs at a time (seed 001: "two on the CPU").
inline constexpr int cpu_slot_limit = 2;
/// An accelerator admits one run at a time (seed 001: "one run at a time on an accelerator").
inline constexpr int accelerator_slot_limit = 1;

/// What this host offers: its CPU and every accelerator libtorch sees.
class host_inventory {
public:
  /// Probes the host (core count, CUDA devices through libtorch) and adds the simulated cards
  /// `sim_devices` describes (e.g. "2x8GiB"). Throws std::invalid_argument naming a bad entry.
  [[nodiscard]] static host_inventory probe(const std::string& sim_devices);

  /// The same, with the simulated cards of $CODEFYUI_SIM_DEVICES.
  [[nodiscard]] static host_inventory probe();

  [[nodiscard]] const std::vector<offered_device>& devices() const { return devices_; }
  [[nodiscard]] const host_devices& counts() const { return counts_; }
  [[nodiscard]] int cores() const { return cores_; }

  /// What a run here executes with, in words: libtorch's version and the CUDA devices it sees.
  /// Workers report its digest, so an operator sees which agents differ.
  [[nodiscard]] std::string environment() const;

  /// Intra-op threads for one run on `device`: the CPU's cores shared among its slots, at least 1.
  [[nodiscard]] int cores_per_run(const std::string& device) const;

private:
  std::vector<offered_device> devices_;
  host_devices counts_;
  int cores_ = 1;
};

} // namespace cdui::devices
