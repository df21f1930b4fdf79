#include "actors/policy/launch_plan.hpp"

#include <algorithm>

#include "devices/device.hpp"

namespace cdui::policy {

namespace {

void append_listed(std::string& list, const std::string& item) {
  list += (list.empty() ? "" : ",") + item;
}

} // namespace

std::map<std::string, std::string> launch_plan::environment() const {
  return {{"CODEFYUI_SIM_DEVICES", sim_devices}, {"CUDA_VISIBLE_DEVICES", cuda_visible_devices}};
}

std::variant<launch_plan, std::string> plan_launch(const std::vector<std::string>& run_devices,
                                                   const std::vector<device_offer>& offers) {
  if (run_devices.empty())
    return std::string{"the run names no device"};
  launch_plan plan;
  std::map<std::string, int> next_index;
  for (const auto& name : run_devices) {
    auto offer = std::find_if(offers.begin(), offers.end(),
                              [&](const auto& o) { return o.name == name; });
    if (offer == offers.end())
      return "this worker does not offer " + name;
    auto kind = devices::kind_of(name);
    auto in_run = kind == "cpu" ? std::string{"cpu"} : kind + ":" + std::to_string(next_index[kind]++);
    plan.cards.push_back({in_run, name, kind, offer->uuid, offer->total_bytes});
    plan.visible_devices.push_back(in_run);
    plan.device_aliases[in_run] = name;
    if (kind == "sim")  // SIZE=UUID: the run's process charges the agent's card, not one of its own
      append_listed(plan.sim_devices, std::to_string(offer->total_bytes)
                                        + (offer->uuid.empty() ? "" : "=" + offer->uuid));
    else if (kind == "cuda")
      append_listed(plan.cuda_visible_devices, name.substr(name.find(':') + 1));
  }
  plan.device = plan.visible_devices.front();
  return plan;
}

} // namespace cdui::policy
