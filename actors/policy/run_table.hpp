#pragma once

// The run queue's one record per run (docs/architecture.md, "The run queue"): every run that has
// not ended has one record here, holding all the queue knows of it — its lane, where it is placed
// or that it floats, whether it runs and where, its memory budget, the memory ledger's gate and
// why it waits, and when it was queued and started — and one erase removes all of it. Plain data
// with no actor inside: the queue keeps a run_table of its run actors' handles (`Handle`), a test
// one of anything copyable.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <iterator>
#include <utility>
#include <vector>

#include "actors/policy/memory_budget.hpp"
#include "actors/policy/placement.hpp"
#include "messages/run_id.hpp"
#include "messages/run_request.hpp"

namespace cdui::policy {

/// A queued run's memory budget (per card) for cards shared by memory, and where it came from; its
/// graph's memory key, by which a run of the same graph that succeeds gives it a default budget or
/// raises a measured or estimated one (docs/http-api.md, "Cards shared by memory").
struct queued_budget {
  std::int64_t bytes = 0;  // 0: none (yet)
  budget_source source = budget_source::typed;
  /// Why it is what it is when it was given or raised by the queue; empty otherwise.
  std::string note;
  bool has_wait = false;
  bool wait = false;
  std::string memory_key;
  int cards = 1;
  /// It waits without a budget at a card that turned shared after it was queued.
  bool wants_default = false;
};

/// Where a floating run with a budget stands with the memory ledger: asked about `cards` (the
/// shared cards that would take it next), or told to wait there (`answered`).
struct floating_ask {
  bool answered = false;
  std::vector<std::string> cards;
};

/// Everything the run queue keeps of one run that has not ended.
template <class Handle>
struct run_record {
  run_id id;
  /// Its run actor, and the key its down message names it by (the actor's id).
  Handle actor{};
  std::uint64_t actor_key = 0;
  run_lane lane = run_lane::queued;
  /// An interactive run's editor session.
  std::string session;
  /// Placement: the slots it queued for or holds (a device set's several); empty while it floats.
  std::vector<std::string> keys;
  /// A run for any worker or the pool, until it is placed (run_table::unfloat), and its place in
  /// the floating runs' order.
  std::optional<floating_run> floating;
  std::uint64_t floating_seq = 0;
  /// It has started (it holds its slots), and a worker executes it.
  bool started = false;
  bool remote = false;
  /// A queued run's memory budget (none for an interactive run).
  std::optional<queued_budget> budget;
  /// The memory ledger: the shared card whose gate it was asked at, and a floating run's ask.
  std::string gate;
  std::optional<floating_ask> ask;
  /// Why it waits for memory, as the ledger (or the queue, for a run without a budget) said it;
  /// none while nothing about memory holds it.
  std::optional<std::string> memory_wait;
  /// When it was queued (its submit; none for an interactive run or one adopted after a restart)
  /// and when it started.
  std::optional<std::int64_t> queued_ms;
  std::optional<std::int64_t> started_ms;
};

/// The runs of a queue that have not ended, by id, with their actors' keys and the floating runs'
/// order (submit order): the only containers of per-run state, kept in step by add and erase.
template <class Handle>
class run_table {
public:
  using record = run_record<Handle>;
  using map_type = std::map<run_id, record>;

  /// A new run; its id must not be in the table.
  record& add(run_id id, Handle actor, std::uint64_t actor_key) {
    auto [at, fresh] = runs_.try_emplace(id);
    if (!fresh)
      throw std::logic_error("run '" + id.str() + "' is in the run queue already");
    auto& r = at->second;
    r.id = std::move(id);
    r.actor = std::move(actor);
    r.actor_key = actor_key;
    by_actor_[actor_key] = r.id;
    return r;
  }

  [[nodiscard]] record* find(const run_id& id) {
    auto at = runs_.find(id);
    return at == runs_.end() ? nullptr : &at->second;
  }
  [[nodiscard]] const record* find(const run_id& id) const {
    auto at = runs_.find(id);
    return at == runs_.end() ? nullptr : &at->second;
  }
  /// The run's record; a run not in the table is a bug of the caller (std::out_of_range naming it).
  [[nodiscard]] record& at(const run_id& id) {
    if (auto* r = find(id))
      return *r;
    throw std::out_of_range("run '" + id.str() + "' is not in the run queue");
  }
  [[nodiscard]] bool contains(const run_id& id) const { return runs_.count(id) != 0; }

  /// The run whose actor has `actor_key`, when it has not ended.
  [[nodiscard]] record* by_actor(std::uint64_t actor_key) {
    auto at = by_actor_.find(actor_key);
    return at == by_actor_.end() ? nullptr : find(at->second);
  }

  /// The run leaves the queue: its record, its actor's key and its place among the floating runs.
  bool erase(const run_id& id) {
    auto at = runs_.find(id);
    if (at == runs_.end())
      return false;
    by_actor_.erase(at->second.actor_key);
    drop_floating(at->second);
    runs_.erase(at);
    return true;
  }

  /// The run floats: it waits for a slot of its kind on any worker (or the pool), after the
  /// runs that float already.
  void float_run(record& r, floating_run what) {
    if (!r.floating) {
      r.floating_seq = ++floating_seq_;
      floating_.emplace(r.floating_seq, r.id);
    }
    r.floating = std::move(what);
  }
  /// The run stops floating (it is placed, or leaves its queue): its ask to the ledger goes too.
  /// false when it did not float.
  bool unfloat(const run_id& id) {
    auto* r = find(id);
    if (!r || !r->floating)
      return false;
    drop_floating(*r);
    r->floating.reset();
    r->ask.reset();
    return true;
  }
  /// The floating runs, in submit order (a copy: placing them changes the order's container).
  [[nodiscard]] std::vector<run_id> floating() const {
    std::vector<run_id> out;
    out.reserve(floating_.size());
    for (const auto& [seq, id] : floating_)
      out.push_back(id);
    return out;
  }
  /// A floating run's place among them from 1; 0 when it does not float.
  [[nodiscard]] std::size_t floating_position(const run_id& id) const {
    const auto* r = find(id);
    if (!r || !r->floating)
      return 0;
    return static_cast<std::size_t>(std::distance(floating_.begin(), floating_.find(r->floating_seq))) + 1;
  }

  /// The run starts at `now_ms`: how long it waited since it was queued, when it was (the first
  /// start of a queued run), for the queue's wait histogram.
  std::optional<std::int64_t> start(record& r, std::int64_t now_ms) {
    std::optional<std::int64_t> waited;
    if (!r.started && r.queued_ms)
      waited = std::max<std::int64_t>(0, now_ms - *r.queued_ms);
    r.started = true;
    r.started_ms = now_ms;
    return waited;
  }

  /// Whether a run this process executes has started (a shutdown waits for those).
  [[nodiscard]] bool runs_here() const {
    return std::any_of(runs_.begin(), runs_.end(),
                       [](const auto& r) { return r.second.started && !r.second.remote; });
  }

  /// The card `card` is no longer shared by memory: the runs gated there wait for memory no more.
  void ungate(const std::string& card) {
    for (auto& [id, r] : runs_)
      if (r.gate == card)
        r.memory_wait.reset();
  }
  /// Room freed on a shared card: the floating runs the ledger told to wait are asked again.
  void ask_again() {
    for (auto& [id, r] : runs_)
      if (r.ask && r.ask->answered)
        r.ask.reset();
  }

  [[nodiscard]] std::size_t size() const { return runs_.size(); }
  [[nodiscard]] bool empty() const { return runs_.empty(); }
  /// The records by id (their fields may change; only add and erase change which runs there are).
  [[nodiscard]] typename map_type::iterator begin() { return runs_.begin(); }
  [[nodiscard]] typename map_type::iterator end() { return runs_.end(); }
  [[nodiscard]] typename map_type::const_iterator begin() const { return runs_.begin(); }
  [[nodiscard]] typename map_type::const_iterator end() const { return runs_.end(); }

private:
  void drop_floating(const record& r) {
    if (r.floating)
      floating_.erase(r.floating_seq);
  }

  map_type runs_;
  std::unordered_map<std::uint64_t, run_id> by_actor_;
  /// The floating runs by the order they started floating in: erased in O(log n) when placed.
  std::map<std::uint64_t, run_id> floating_;
  std::uint64_t floating_seq_ = 0;
};

} // namespace cdui::policy
