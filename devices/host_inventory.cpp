#include "devices/host_inventory.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <utility>

#include "devices/cuda_cards.hpp"
#include "devices/memory.hpp"
#include "devices/nvml.hpp"
#include "devices/sim_card_registry.hpp"
#include "devices/sim_devices.hpp"
#include "torch_compat/cuda.hpp"

#include <torch/cuda.h>
#include <torch/version.h>

namespace cdui::devices {

host_inventory host_inventory::probe(cuda_detail detail) {
  const char* sim = std::getenv("CODEFYUI_SIM_DEVICES");
  return probe(sim == nullptr ? "" : sim, detail);
}

namespace {

/// The driver's cards, or why there are none.
std::pair<std::vector<gpu_card>, std::string> driver_cards() {
  auto library = nvml::shared();
  if (auto* why = std::get_if<std::string>(&library))
    return {{}, *why};
  auto listed = std::get<std::shared_ptr<nvml>>(library)->cards();
  if (auto* failed = std::get_if<std::string>(&listed))
    return {{}, *failed};
  return {std::move(std::get<std::vector<gpu_card>>(listed)), {}};
}

} // namespace

host_inventory host_inventory::probe(const std::string& sim_devices, cuda_detail detail) {
  auto sims = parse_sim_devices(sim_devices);
  if (auto* err = std::get_if<std::string>(&sims))
    throw std::invalid_argument("CODEFYUI_SIM_DEVICES: " + *err);
  host_inventory inv;
  inv.cores_ = std::max(1u, std::thread::hardware_concurrency());
  inv.counts_.cuda_count = static_cast<int>(torch::cuda::device_count());
  inv.devices_.push_back(
    {"cpu", "CPU (" + std::to_string(inv.cores_) + " cores)", cpu_slot_limit, false, 0, ""});
  // Each CUDA card with the driver's name, UUID and memory (NVML), matched by the UUID the CUDA
  // runtime gives it, so a card offered here and by an agent is one card.
  if (detail == cuda_detail::described) {
    auto [cards, nvml_problem] = driver_cards();
    auto visible = cuda_visible_cards(cards, std::getenv("CUDA_VISIBLE_DEVICES"));
    for (auto& offer : cuda_offers(inv.counts_.cuda_count, torch_compat::cuda_uuids(), visible, nvml_problem))
      inv.devices_.push_back(std::move(offer));
    inv.cuda_note_ = devices::cuda_note(inv.counts_.cuda_count, torch_compat::has_cuda(), cards, nvml_problem);
  } else {
    for (auto& offer : cuda_offers(inv.counts_.cuda_count, {}, {}, "not described in a run's process"))
      inv.devices_.push_back(std::move(offer));
  }
  for (const auto& card : std::get<std::vector<sim_card>>(sims)) {
    auto name = "sim:" + std::to_string(card.index);
    inv.devices_.push_back({name,
                            "simulated accelerator #" + std::to_string(card.index) + " ("
                              + format_bytes(card.total_bytes) + ", executes on the CPU)",
                            accelerator_slot_limit, true, card.total_bytes, card.uuid});
    inv.counts_.sim_total_bytes.push_back(card.total_bytes);
  }
  inv.counts_.sim_count = static_cast<int>(inv.counts_.sim_total_bytes.size());
  // The runs of this process charge these cards' shared memory (memory_scope).
  use_sim_cards(std::get<std::vector<sim_card>>(sims));
  return inv;
}

std::string host_inventory::environment() const {
  return "libtorch " + std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR)
         + "." + std::to_string(TORCH_VERSION_PATCH) + (torch_compat::has_cuda() ? " (CUDA)" : " (CPU)") + ", "
         + std::to_string(counts_.cuda_count) + " CUDA devices";
}

int host_inventory::cores_per_run(const std::string& device) const {
  // A CUDA run needs host threads only to feed its card; the runs that compute on the CPU share it.
  if (device == "cpu" || device.rfind("sim:", 0) == 0)
    return cpu_share(cores_, counts_.sim_count);
  return cores_;
}

} // namespace cdui::devices
