#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "devices/device.hpp"

namespace cdui::devices {

/// How much a probe learns of the CUDA cards: each card's name, UUID and memory from the driver
/// (what an offer needs), or only how many torch sees (what a run's process needs, at no NVML cost).
enum class cuda_detail { described, counted };

/// What this host offers: its CPU and every accelerator libtorch sees.
class host_inventory {
public:
  /// Probes the host (core count, CUDA devices through libtorch and NVML) and adds the simulated cards
  /// `sim_devices` describes (e.g. "2x8GiB"). Throws std::invalid_argument naming a bad entry.
  [[nodiscard]] static host_inventory probe(const std::string& sim_devices,
                                            cuda_detail detail = cuda_detail::described);

  /// The same, with the simulated cards of $CODEFYUI_SIM_DEVICES.
  [[nodiscard]] static host_inventory probe(cuda_detail detail = cuda_detail::described);

  [[nodiscard]] const std::vector<offered_device>& devices() const { return devices_; }
  [[nodiscard]] const host_devices& counts() const { return counts_; }
  [[nodiscard]] int cores() const { return cores_; }
  /// Why no CUDA card is offered though the host may have some (no driver, a libtorch without
  /// CUDA, CUDA_VISIBLE_DEVICES); empty when there is nothing to say (cuda_note).
  [[nodiscard]] const std::string& cuda_note() const { return cuda_note_; }

  /// What a run here executes with, in words: libtorch's version and the CUDA devices it sees.
  /// Workers report its digest, so an operator sees which agents differ.
  [[nodiscard]] std::string environment() const;

  /// Intra-op threads for one run on `device`: on `cpu` or a sim card, the cores shared among the
  /// CPU's slots and the sim cards (cpu_share); on a CUDA card, all of them.
  [[nodiscard]] int cores_per_run(const std::string& device) const;

private:
  std::vector<offered_device> devices_;
  host_devices counts_;
  int cores_ = 1;
  std::string cuda_note_;
};

} // namespace cdui::devices
