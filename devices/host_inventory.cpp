#include "devices/host_inventory.hpp"

#include <algorithm>
#include <thread>

#include <torch/cuda.h>

namespace cdui::devices {

host_inventory host_inventory::probe() {
  host_inventory inv;
  inv.cores_ = std::max(1u, std::thread::hardware_concurrency());
  inv.counts_.cuda_count = static_cast<int>(torch::cuda::device_count());
  inv.devices_.push_back({"cpu", "CPU (" + std::to_string(inv.cores_) + " cores)", cpu_slot_limit});
  for (int i = 0; i < inv.counts_.cuda_count; ++i) {
    auto name = "cuda:" + std::to_string(i);
    inv.devices_.push_back({name, "NVIDIA CUDA #" + std::to_string(i), accelerator_slot_limit});
  }
  return inv;
}

int host_inventory::cores_per_run(const std::string& device) const {
  // An accelerator run needs host threads only to feed its card; CPU runs split the cores.
  return device == "cpu" ? std::max(1, cores_ / cpu_slot_limit) : cores_;
}

} // namespace cdui::devices
