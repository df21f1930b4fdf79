#include "devices/cuda_cards.hpp"

#include <algorithm>
#include <cstdio>

#include "devices/sim_devices.hpp"  // format_bytes
#include "messages/text.hpp"

namespace cdui::devices {

namespace {

/// The card one CUDA_VISIBLE_DEVICES entry names: an index (digits only), or a UUID or a prefix
/// of one ("GPU-" may be left out) that matches exactly one card; none otherwise.
const gpu_card* card_named(const std::vector<gpu_card>& cards, const std::string& entry) {
  if (entry.empty())
    return nullptr;
  if (std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (entry.size() > 6)
      return nullptr;
    auto index = static_cast<unsigned>(std::stoul(entry));
    auto found = std::find_if(cards.begin(), cards.end(), [&](const gpu_card& c) { return c.index == index; });
    return found == cards.end() ? nullptr : &*found;
  }
  auto prefix = entry.rfind("GPU-", 0) == 0 ? entry : "GPU-" + entry;
  const gpu_card* match = nullptr;
  for (const auto& c : cards)
    if (c.uuid.rfind(prefix, 0) == 0) {
      if (match != nullptr)
        return nullptr;  // ambiguous
      match = &c;
    }
  return match;
}

std::string card_label(const gpu_card& card) {
  auto name = card.name.empty() ? std::string{"NVIDIA card"} : card.name;
  auto label = name + " (" + short_uuid(card.uuid) + ", " + format_bytes(card.memory.total_bytes);
  if (card.compute_major > 0)
    label += ", compute " + std::to_string(card.compute_major) + "." + std::to_string(card.compute_minor);
  return label + ")";
}

} // namespace

std::vector<gpu_card> cuda_visible_cards(const std::vector<gpu_card>& cards, const char* visible) {
  if (visible == nullptr)
    return cards;
  std::vector<gpu_card> seen;
  std::string_view rest{visible};
  while (true) {
    auto comma = rest.find(',');
    const auto* card = card_named(cards, std::string{text::trimmed(rest.substr(0, comma))});
    if (card == nullptr || std::any_of(seen.begin(), seen.end(), [&](const gpu_card& s) { return s.uuid == card->uuid; }))
      break;
    seen.push_back(*card);
    if (comma == std::string_view::npos)
      break;
    rest.remove_prefix(comma + 1);
  }
  return seen;
}

std::vector<offered_device> cuda_offers(int count, const std::vector<std::string>& torch_uuids,
                                        const std::vector<gpu_card>& visible, const std::string& nvml_problem) {
  std::vector<offered_device> offers;
  for (int i = 0; i < count; ++i) {
    auto index = static_cast<std::size_t>(i);
    const gpu_card* card = nullptr;
    auto uuid = index < torch_uuids.size() ? torch_uuids[index] : std::string{};
    if (!uuid.empty()) {
      auto found = std::find_if(visible.begin(), visible.end(), [&](const gpu_card& c) { return c.uuid == uuid; });
      card = found == visible.end() ? nullptr : &*found;
    } else if (index < visible.size()) {
      card = &visible[index];
    }
    auto name = "cuda:" + std::to_string(i);
    if (card == nullptr) {
      auto why = nvml_problem.empty() ? std::string{"the driver does not list it"} : nvml_problem;
      offers.push_back({name, "NVIDIA CUDA #" + std::to_string(i) + " (memory unknown: " + why + ")",
                        accelerator_slot_limit, false, 0, uuid});
      continue;
    }
    offers.push_back({name, card_label(*card), accelerator_slot_limit, false, card->memory.total_bytes, card->uuid,
                      card->compute_major, card->compute_minor});
  }
  return offers;
}

std::string cuda_bf16_text(int compute_major, int compute_minor) {
  if (compute_major <= 0)
    return "-";
  auto capability = std::to_string(compute_major) + "." + std::to_string(compute_minor);
  return compute_major >= cuda_bf16_major ? "native (compute " + capability + ")"
                                          : "not native (compute " + capability + ", below "
                                              + std::to_string(cuda_bf16_major) + ".0)";
}

std::string short_uuid(std::string_view uuid) {
  // "GPU-" and the first group of 8 hex digits.
  auto dash = uuid.find('-', uuid.rfind("GPU-", 0) == 0 || uuid.rfind("MIG-", 0) == 0 ? 4 : 0);
  return std::string{uuid.substr(0, dash)};
}

std::string gpu_uuid_text(const unsigned char* bytes16) {
  std::string text = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      text += '-';
    std::snprintf(hex, sizeof hex, "%02x", bytes16[i]);
    text += hex;
  }
  return text;
}

std::string cuda_note(int torch_count, bool torch_has_cuda, const std::vector<gpu_card>& cards,
                      const std::string& nvml_problem) {
  if (torch_count > 0)
    return {};
  std::string names;
  for (const auto& c : cards)
    names += (names.empty() ? "" : ", ") + c.name;
  auto count = std::to_string(cards.size());
  if (!torch_has_cuda)
    return cards.empty() ? std::string{}
                         : count + " NVIDIA card" + (cards.size() == 1 ? "" : "s") + " (" + names
                             + ") not offered: this cdui's libtorch has no CUDA; build it with -DCDUI_TORCH=pip "
                               "(docs/gpu.md)";
  if (!nvml_problem.empty())
    return "no CUDA cards: " + nvml_problem;
  if (cards.empty())
    return "no CUDA cards: the NVIDIA driver lists none";
  return "no CUDA cards: the driver has " + count + " (" + names + ") but CUDA sees none of them "
         "(CUDA_VISIBLE_DEVICES?)";
}

} // namespace cdui::devices
