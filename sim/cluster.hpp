#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "actors/policy/placement.hpp"

namespace cdui::sim {

/// Workers alike: how many, their cards each, and each card's memory.
struct worker_group {
  int workers = 0;
  int cards = 0;
  std::int64_t card_bytes = 0;
};

/// The cluster a trace is replayed on (docs/benchmarks.md, "A cluster simulator"): groups of
/// workers, each offering `cuda:0`..`cuda:N-1`, every card with a UUID of its own (no card is
/// offered twice). The server offers no device itself: every run goes to a worker.
struct cluster_spec {
  std::vector<worker_group> groups;

  /// "1000x8x80": 1,000 workers of 8 cards of 80 GiB; groups joined by '+'
  /// ("500x8x80+500x4x40"). The refusal names the part at fault.
  [[nodiscard]] static std::variant<cluster_spec, std::string> parse(const std::string& text);
  /// parse()'s form back.
  [[nodiscard]] std::string text() const;

  [[nodiscard]] std::size_t workers() const;
  [[nodiscard]] std::size_t cards() const;
  /// The most cards one worker has: the largest device set that can run.
  [[nodiscard]] int most_cards() const;
  [[nodiscard]] std::int64_t largest_card() const;
  [[nodiscard]] std::int64_t memory() const;
};

/// One card as the simulator places runs on it, in the order a run for any worker looks at them
/// (workers by name, each one's devices in order: policy::candidate_slots).
struct card_place {
  std::string key;  // "w0001/cuda:3", the admission key
  std::string device;
  std::string uuid;
  std::size_t worker = 0;  // index into the workers, by name
  int position = 0;        // its place among its worker's cards
  std::int64_t bytes = 0;
};

/// The workers' names ("w0000", ... in name order, zero-padded so that name order is number
/// order), the cards in candidate order, and the workers as the run queue knows them (all open).
struct cluster_layout {
  std::vector<std::string> worker_names;
  std::vector<card_place> cards;
  /// Each worker's first card, into `cards`.
  std::vector<std::size_t> first_card;
  policy::known_workers workers;
};
[[nodiscard]] cluster_layout lay_out(const cluster_spec& spec);

} // namespace cdui::sim
