#include "devices/sim_devices.hpp"

#include <cstdio>
#include "devices/device.hpp"

#include <unistd.h>

#include <array>
#include <cctype>
#include <charconv>

namespace cdui::devices {

namespace {

struct unit {
  std::string_view suffix;
  std::int64_t factor;
};

// "64M" and "64Mi" are 64 MiB, as docker's --memory and kubectl's quantities write it.
constexpr std::array<unit, 17> units{{
  {"TiB", 1LL << 40}, {"GiB", 1LL << 30}, {"MiB", 1LL << 20}, {"KiB", 1LL << 10},
  {"TB", 1'000'000'000'000LL}, {"GB", 1'000'000'000LL}, {"MB", 1'000'000LL}, {"KB", 1'000LL},
  {"B", 1},
  {"Ti", 1LL << 40}, {"Gi", 1LL << 30}, {"Mi", 1LL << 20}, {"Ki", 1LL << 10},
  {"T", 1LL << 40}, {"G", 1LL << 30}, {"M", 1LL << 20}, {"K", 1LL << 10},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

} // namespace

std::variant<std::int64_t, std::string> parse_bytes(std::string_view text) {
  text = trim(text);
  std::int64_t factor = 1;
  for (const auto& u : units) {
    if (text.size() > u.suffix.size() && text.substr(text.size() - u.suffix.size()) == u.suffix) {
      factor = u.factor;
      text = trim(text.substr(0, text.size() - u.suffix.size()));
      break;
    }
  }
  double value = 0;
  try {
    std::size_t used = 0;
    value = std::stod(std::string{text}, &used);
    if (used != text.size() || text.empty())
      return "'" + std::string{text} + "' is not a size (e.g. 8GiB, 512MiB, 64M)";
  } catch (const std::exception&) {
    return "'" + std::string{text} + "' is not a size (e.g. 8GiB, 512MiB, 64M)";
  }
  if (!(value * static_cast<double>(factor) >= 1) || value * static_cast<double>(factor) > 9.0e18)
    return "a size must be at least 1 byte and below 8 EiB, got '" + std::string{text} + "'";
  return static_cast<std::int64_t>(value * static_cast<double>(factor));
}

namespace {

/// 1 to `longest` letters, digits, '.', '_' or '-': safe in a UUID and a segment's name.
bool is_card_name(const std::string& name, std::size_t longest) {
  return !name.empty() && name.size() <= longest
         && name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
              == std::string::npos;
}

} // namespace

std::string own_sim_card_prefix() {
  auto host = host_name();
  return "SIM-" + (host.empty() ? std::string{"host"} : host) + "-";
}

std::variant<std::vector<sim_card>, std::string> parse_sim_devices(std::string_view text) {
  std::vector<sim_card> cards;
  text = trim(text);
  if (text.empty())
    return cards;
  while (!text.empty()) {
    auto comma = text.find(',');
    auto entry = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    // "=UUID": one card that is another process's, by its UUID.
    std::string given_uuid;
    if (auto eq = entry.find('='); eq != std::string_view::npos) {
      given_uuid = std::string{trim(entry.substr(eq + 1))};
      entry = trim(entry.substr(0, eq));
      if (!is_card_name(given_uuid, 128) || entry.find_first_of("@x") != std::string_view::npos)
        return "sim devices entry '" + std::string{entry} + "=" + given_uuid + "': one size, then "
               "'=' and a UUID of 1 to 128 letters, digits, '.', '_' or '-'";
    }
    // "@CARD": these cards stand for physical ones that another process offers too.
    std::string card;
    if (auto at = entry.find('@'); at != std::string_view::npos) {
      card = std::string{trim(entry.substr(at + 1))};
      entry = trim(entry.substr(0, at));
      if (!is_card_name(card, 64))
        return "sim devices entry '" + std::string{entry} + "@" + card + "': the name after '@' "
               "must be 1 to 64 letters, digits, '.', '_' or '-'";
    }
    int count = 1;
    if (auto x = entry.find('x'); x != std::string_view::npos) {
      auto n = trim(entry.substr(0, x));
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), count);
      if (ec != std::errc{} || end != n.data() + n.size() || count < 1 || count > 64)
        return "sim devices entry '" + std::string{entry} + "': the count before 'x' must be 1..64";
      entry = entry.substr(x + 1);
    }
    auto bytes = parse_bytes(entry);
    if (auto* err = std::get_if<std::string>(&bytes))
      return "sim devices entry '" + std::string{entry} + "': " + *err;
    for (int i = 0; i < count; ++i) {
      auto index = static_cast<int>(cards.size());
      // A simulated card is this process's own, unless it is named as one another offers too.
      bool own = card.empty() && given_uuid.empty();
      auto uuid = !given_uuid.empty() ? given_uuid
                  : own               ? own_sim_card_prefix() + std::to_string(::getpid()) + "-"
                                          + std::to_string(index)
                                      : "SIM-" + card + "-" + std::to_string(i);
      cards.push_back({index, std::get<std::int64_t>(bytes), uuid, own});
    }
  }
  return cards;
}

std::string format_bytes(std::int64_t bytes) {
  char buf[32];
  auto b = static_cast<double>(bytes);
  if (bytes >= (1LL << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1LL << 30));
  else if (bytes >= (1LL << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1LL << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

} // namespace cdui::devices
