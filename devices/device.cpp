#include "devices/device.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include <unistd.h>

namespace cdui::devices {

namespace {

struct kind_name {
  device_kind kind;
  std::string_view name;
};

constexpr std::array<kind_name, 4> indexed_kinds{{
  {device_kind::cpu, "cpu"},
  {device_kind::cuda, "cuda"},
  {device_kind::mps, "mps"},
  {device_kind::sim, "sim"},
}};

std::optional<int> parse_index(std::string_view digits) {
  int value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size() || value < 0)
    return std::nullopt;
  return value;
}

std::string plural(int n, std::string_view word) {
  return std::to_string(n) + " " + std::string{word} + (n == 1 ? "" : "s");
}

} // namespace

std::variant<device_spec, device_parse_error> parse_device(std::string_view text) {
  device_spec spec;
  spec.text = std::string{text};
  if (text == "auto") {
    spec.kind = device_kind::auto_select;
    return spec;
  }
  for (const auto& [kind, name] : indexed_kinds) {
    if (text.substr(0, name.size()) != name)
      continue;
    auto rest = text.substr(name.size());
    spec.kind = kind;
    if (rest.empty())
      return spec;
    if (rest.front() != ':')
      break;
    spec.index = parse_index(rest.substr(1));
    spec.malformed = !spec.index.has_value();
    if (kind == device_kind::cpu && (spec.malformed || *spec.index != 0))
      break;
    return spec;
  }
  return device_parse_error{"unknown device '" + std::string{text}
                            + "' (expected cpu, auto, cuda, cuda:N, mps, mps:N, sim or sim:N)"};
}

resolved_device resolve_device(const device_spec& spec, const host_devices& host) {
  auto indexed = [&](std::string_view kind, int count, int current) -> resolved_device {
    auto current_name = std::string{kind} + ":" + std::to_string(current);
    if (count == 0)
      return {"cpu", "device " + spec.text + " was requested, but this machine has no "
                       + std::string{kind} + " device, so it runs on cpu."};
    if (!spec.index && !spec.malformed)
      return {current_name, std::nullopt};
    if (spec.malformed)
      return {current_name, "device '" + spec.text + "' is not a valid " + std::string{kind}
                              + " device string; this machine has " + plural(count, "device")
                              + ", so it runs on " + current_name + "."};
    if (*spec.index >= count)
      return {current_name, "device " + spec.text + " does not exist; this machine has "
                              + plural(count, std::string{kind} + " device") + ", so it runs on "
                              + current_name + "."};
    return {std::string{kind} + ":" + std::to_string(*spec.index), std::nullopt};
  };
  switch (spec.kind) {
    case device_kind::cpu:
      return {"cpu", std::nullopt};
    case device_kind::cuda:
      return indexed("cuda", host.cuda_count, host.current_cuda);
    case device_kind::mps:
      return indexed("mps", host.has_mps ? 1 : 0, 0);
    case device_kind::sim:
      return indexed("sim", host.sim_count, 0);
    case device_kind::auto_select:
      if (host.cuda_count > 0)
        return {"cuda:" + std::to_string(host.current_cuda), std::nullopt};
      if (host.has_mps)
        return {"mps:0", std::nullopt};
      return {"cpu", std::nullopt};
  }
  return {"cpu", std::nullopt};
}

std::string worker_run_fallback(const std::string& requested,
                                const std::map<std::string, std::string>& aliases,
                                const std::string& runs_on) {
  std::vector<std::pair<std::string, std::string>> cards;
  for (const auto& [in_run, worker_card] : aliases)
    if (in_run != "cpu")
      cards.emplace_back(in_run, worker_card);
  // By index within the set's kind: cuda:2 before cuda:10.
  std::sort(cards.begin(), cards.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.first.size(), a.first) < std::make_pair(b.first.size(), b.first);
  });
  std::string listed;
  for (const auto& [in_run, worker_card] : cards)
    listed += (listed.empty() ? "" : ", ") + in_run + " = the worker's " + worker_card;
  auto has = cards.empty() ? std::string{"no card"}
                           : plural(static_cast<int>(cards.size()), "card") + " (" + listed + ")";
  return "is set to device " + requested + "; this run has " + has
         + ", so when it executes, it runs on " + runs_on + ".";
}

std::string kind_of(std::string_view device) {
  return std::string{device.substr(0, device.find(':'))};
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
}

} // namespace cdui::devices
