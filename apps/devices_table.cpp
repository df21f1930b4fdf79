#include "apps/devices_table.hpp"

#include <algorithm>

#include "apps/text_table.hpp"
#include "devices/cuda_cards.hpp"

namespace cdui::apps {

std::string devices_table(const std::vector<devices::offered_device>& offered,
                          const devices::bf16_support& cpu) {
  auto cuda_cards = std::count_if(offered.begin(), offered.end(), [](const devices::offered_device& d) {
    return devices::kind_of(d.name) == "cuda";
  });
  std::vector<std::vector<std::string>> rows{{"DEVICE", "SLOTS", "BF16", "DESCRIPTION"}};
  bool current_listed = false;
  for (const auto& d : offered) {
    auto kind = devices::kind_of(d.name);
    auto bf16 = kind == "cpu" || kind == "sim" ? cpu.text()
                : kind == "cuda"                 ? devices::cuda_bf16_text(d.compute_major, d.compute_minor)
                                                 : std::string{"-"};
    auto description = d.label + (d.simulated ? " [simulated]" : "");
    if (kind == "cuda" && cuda_cards == 1) {
      rows.push_back({"cuda", std::to_string(d.slot_limit), bf16, d.label + ", " + d.name + ", the only card"});
      continue;
    }
    if (kind == "cuda" && !current_listed) {
      rows.push_back({"cuda", "-", "-", "NVIDIA CUDA (whichever card torch is currently pointed at)"});
      current_listed = true;
    }
    rows.push_back({d.name, std::to_string(d.slot_limit), bf16, description});
  }
  return format_table(rows);
}

} // namespace cdui::apps
