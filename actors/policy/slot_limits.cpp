#include "actors/policy/slot_limits.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "messages/slot_key.hpp"

namespace cdui::policy {

namespace {

std::string trimmed_lower(std::string_view s) {
  auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return "";
  s = s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
  std::string out{s};
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string canonical_device(const std::string& key, int current_cuda) {
  if (key == "cuda")
    return "cuda:" + std::to_string(current_cuda);
  if (key == "mps")
    return "mps:0";
  if (key == "sim")
    return "sim:0";
  return key;
}

/// "cuda" -> "cuda:<current>", "gpu-box/sim" -> "gpu-box/sim:0": the device part lower-cased and
/// canonical, a worker's name as it was written (worker names are case-sensitive).
std::string canonical_key(std::string_view entry_key, int current_cuda) {
  auto key = slot_key::parse(entry_key);
  if (key.local())
    return canonical_device(trimmed_lower(entry_key), current_cuda);
  key.offerer.erase(0, key.offerer.find_first_not_of(" \t"));
  key.device = canonical_device(trimmed_lower(key.device), 0);
  return key.str();
}

} // namespace

slot_limit_overrides parse_slot_limits(std::string_view text, int current_cuda) {
  slot_limit_overrides out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    auto entry = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    start = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    auto shown = std::string{entry};
    if (trimmed_lower(entry).empty())
      continue;
    auto skip = [&](const std::string& why) {
      out.warnings.push_back(std::string{slot_limits_env} + ": skipped the entry '" + shown
                             + "': " + why);
    };
    auto eq = entry.rfind('=');
    if (eq == std::string_view::npos) {
      skip("it has no '=' (write device=N, e.g. cuda:0=2)");
      continue;
    }
    auto key = trimmed_lower(entry.substr(0, eq));
    auto raw_key = entry.substr(0, eq);
    auto value = trimmed_lower(entry.substr(eq + 1));
    if (key.empty()) {
      skip("the device before '=' is empty");
      continue;
    }
    int limit = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
    if (value.empty() || ec != std::errc{} || end != value.data() + value.size()) {
      skip("'" + value + "' is not an integer");
      continue;
    }
    if (limit < 1) {
      skip("the limit must be at least 1");
      continue;
    }
    out.limits[canonical_key(raw_key, current_cuda)] = limit;
  }
  return out;
}

} // namespace cdui::policy
