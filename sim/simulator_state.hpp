#pragma once

// The simulator's state, private to simulator.cpp (the events, starts and ends, memory and OOMs)
// and simulator_placement.cpp (the run queue's part: placing runs for any worker, the ledger's
// answers).

#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/policy/admission.hpp"
#include "actors/policy/card_groups.hpp"
#include "actors/policy/card_ledger.hpp"
#include "actors/policy/placement.hpp"
#include "actors/policy/run_table.hpp"
#include "sim/card_index.hpp"
#include "sim/floating_runs.hpp"
#include "sim/simulator.hpp"

namespace cdui::sim {

struct simulator::state {
  state(const cluster_spec& cluster, const policy_spec& policy, sim_options options);

  cluster_spec cluster;
  policy_spec policy;
  sim_options opt;
  cluster_layout layout;
  bool shared = false;
  /// This server offers no device: every run goes to a worker.
  policy::local_devices local;

  // The policy's objects, as the run queue and the memory ledger hold them.
  policy::admission slots;
  policy::card_groups groups;
  std::vector<std::optional<policy::card_ledger>> ledgers;  // by card; none when exclusive
  /// The floating runs as the run queue keeps them (literal placement only).
  policy::run_table<int> table;

  std::unordered_map<std::string, std::size_t> card_of_key;
  /// Each worker alone, as policy::free_slots takes workers, for the indexed placement.
  std::vector<policy::known_workers> single_worker;
  card_index index;
  floating_runs floating;
  std::vector<char> dirty_flag;
  std::vector<std::size_t> dirty;

  /// What each card's runs really hold (peaks plus contexts), their peaks alone, and its runs in
  /// start order.
  struct card_use {
    std::int64_t used = 0;
    std::int64_t peaks = 0;
    std::vector<std::size_t> runs;
  };
  std::vector<card_use> use;

  trace jobs;
  std::vector<job_outcome> out;
  /// A job's cards (named, or once placed) and when it ends; whether it floats, or is to fail.
  struct live_run {
    std::vector<std::size_t> cards;
    std::int64_t end_at = -1;
    bool floats = false;
    bool failing = false;
  };
  std::vector<live_run> live;
  std::size_t next_submit = 0;
  /// Named device sets: per set size, the (worker, first position) blocks taken round robin.
  std::unordered_map<int, std::vector<std::pair<std::size_t, int>>> blocks;
  std::size_t next_block = 0;

  struct event {
    std::int64_t time;
    std::size_t job;
    bool operator>(const event& o) const { return time != o.time ? time > o.time : job > o.job; }
  };
  std::priority_queue<event, std::vector<event>, std::greater<>> ends;
  std::vector<std::size_t> victims;

  std::int64_t now = 0;
  std::int64_t peaks_in_use = 0;
  std::size_t busy_cards = 0;
  double peak_byte_seconds = 0;
  double busy_card_seconds = 0;
  std::size_t queued = 0;
  std::size_t running = 0;
  std::uint64_t decisions = 0;
  std::uint64_t card_verdicts = 0;

  // simulator.cpp
  void submit(std::size_t j);
  void settle();
  void pump();
  void start(std::size_t j);
  void finish(std::size_t j, job_outcome::state how);
  void advance(std::int64_t t);
  void touch(std::size_t card);
  void refresh();
  [[nodiscard]] std::vector<std::string> keys_of(const std::vector<std::size_t>& cards) const;

  // simulator_placement.cpp
  [[nodiscard]] policy::floating_run floating_for(std::size_t j) const;
  /// The named set for job j: the next block of its size, round robin.
  [[nodiscard]] std::vector<std::size_t> named_set(std::size_t j);
  void float_job(std::size_t j);
  std::size_t place_literal(policy::run_table<int>& runs, std::size_t most = SIZE_MAX);
  std::size_t place_indexed();
  /// The ledger's answer to an ask from the admission gate (a named run on shared cards).
  bool ask_memory(std::size_t j);
  /// The ledger's answer for a floating run on `keys`, finished by policy::place_later; true when
  /// it started or was refused.
  bool ask_floating(std::size_t j, const std::vector<std::string>& keys, bool busy_others);
  void place_by_count(std::size_t j, const std::vector<slot_key>& keys);
  void start_placed(std::size_t j, std::size_t card);
  void refuse(std::size_t j);
  void unfloat(std::size_t j);
};

} // namespace cdui::sim
