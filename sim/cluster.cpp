#include "sim/cluster.hpp"

#include <algorithm>
#include <cstdio>

#include "messages/run_request.hpp"
#include "messages/slot_key.hpp"

namespace cdui::sim {

namespace {

/// "1000x8x80" -> a group; the refusal otherwise.
std::variant<worker_group, std::string> parse_group(const std::string& part) {
  int workers = 0;
  int cards = 0;
  double gib = 0;
  char tail = 0;
  if (std::sscanf(part.c_str(), "%dx%dx%lf%c", &workers, &cards, &gib, &tail) != 3)
    return "'" + part + "' is not WORKERSxCARDSxGIB (e.g. 1000x8x80)";
  if (workers < 1 || cards < 1 || cards > 64 || !(gib > 0))
    return "'" + part + "': workers and cards must be at least 1 (cards at most 64), memory above 0 GiB";
  return worker_group{workers, cards, static_cast<std::int64_t>(gib * bytes_per_gib)};
}

std::string gib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(bytes) / bytes_per_gib);
  return buf;
}

} // namespace

std::variant<cluster_spec, std::string> cluster_spec::parse(const std::string& text) {
  cluster_spec out;
  std::size_t from = 0;
  while (from <= text.size()) {
    auto plus = text.find('+', from);
    auto part = text.substr(from, plus == std::string::npos ? std::string::npos : plus - from);
    auto group = parse_group(part);
    if (auto* why = std::get_if<std::string>(&group))
      return "cluster " + *why;
    out.groups.push_back(std::get<worker_group>(group));
    if (plus == std::string::npos)
      break;
    from = plus + 1;
  }
  return out;
}

std::string cluster_spec::text() const {
  std::string out;
  for (const auto& g : groups)
    out += (out.empty() ? "" : "+") + std::to_string(g.workers) + "x" + std::to_string(g.cards) + "x"
           + gib(g.card_bytes);
  return out;
}

std::size_t cluster_spec::workers() const {
  std::size_t n = 0;
  for (const auto& g : groups)
    n += static_cast<std::size_t>(g.workers);
  return n;
}

std::size_t cluster_spec::cards() const {
  std::size_t n = 0;
  for (const auto& g : groups)
    n += static_cast<std::size_t>(g.workers) * static_cast<std::size_t>(g.cards);
  return n;
}

int cluster_spec::most_cards() const {
  int most = 0;
  for (const auto& g : groups)
    most = std::max(most, g.cards);
  return most;
}

std::int64_t cluster_spec::largest_card() const {
  std::int64_t most = 0;
  for (const auto& g : groups)
    most = std::max(most, g.card_bytes);
  return most;
}

std::int64_t cluster_spec::memory() const {
  std::int64_t sum = 0;
  for (const auto& g : groups)
    sum += static_cast<std::int64_t>(g.workers) * g.cards * g.card_bytes;
  return sum;
}

cluster_layout lay_out(const cluster_spec& spec) {
  cluster_layout out;
  auto width = std::max<std::size_t>(4, std::to_string(spec.workers()).size());
  for (const auto& g : spec.groups)
    for (int w = 0; w < g.workers; ++w) {
      auto number = std::to_string(out.worker_names.size());
      auto name = "w" + std::string(width - number.size(), '0') + number;
      policy::known_worker known;
      known.open = true;
      out.first_card.push_back(out.cards.size());
      for (int c = 0; c < g.cards; ++c) {
        card_place card;
        card.device = "cuda:" + std::to_string(c);
        card.key = slot_key{name, card.device}.str();
        card.uuid = "GPU-" + name + "-" + std::to_string(c);
        card.worker = out.worker_names.size();
        card.position = c;
        card.bytes = g.card_bytes;
        known.devices.push_back(card.device);
        known.uuids.push_back(card.uuid);
        out.cards.push_back(std::move(card));
      }
      out.workers.emplace(name, std::move(known));
      out.worker_names.push_back(std::move(name));
    }
  return out;
}

} // namespace cdui::sim
