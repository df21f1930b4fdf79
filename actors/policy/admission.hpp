#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/policy/ranked_queue.hpp"

namespace cdui::policy {

/// Why a waiting run does not start now (admission::why_waiting): the first thing that holds it,
/// on one of its keys, as plain data for the run queue to word.
struct wait_cause {
  enum class kind {
    none,        // nothing holds it (it starts at the next admit()), or it is not waiting
    closed,      // `key` admits no runs: its worker is away or draining
    behind,      // `position - 1` runs wait before it in `key`'s queue, `front` first
    reserved,    // `front`, a device set at the front of `key`, reserves it until `waits_for` is free
    full,        // it is next on `key`, which runs its limit already (`holders`)
    group_full,  // it is next on `key`, whose shared budget `group` is full (`holders`)
    memory,      // it is next on `key`, a card shared by memory: the ledger judges it
  };
  kind what = kind::none;
  std::string key;
  /// Its 1-based place in `key`'s queue.
  std::size_t position = 0;
  /// behind, reserved: the run at the front of `key`'s queue (waiting).
  std::string front;
  /// reserved: the key that `front` waits for.
  std::string waits_for;
  /// full: the runs that hold `key`; group_full: those that hold a key of `group`.
  std::vector<std::string> holders;
  /// full: `key`'s limit; group_full: `group`'s.
  int limit = 0;
  std::string group;
  /// A device set: its other keys where it is at the front already, which it reserves meanwhile.
  std::vector<std::string> reserving;
};

/// The admission policy of the run queue: one FIFO per device key, each device admitting at most its
/// limit of runs at once. A run names one device or a device set; it starts when it is at the front
/// of the queue of every device it names and each of those has room, and takes a place on all of
/// them at once. Queues are strict FIFOs in submit order, so a device-set run at the front of a
/// queue holds that queue for itself (it reserves the slot) until its other devices are free: a
/// stream of single-device runs cannot starve it, and since every queue is in the same global
/// submit order, no two runs can wait for each other.
/// Plain data: no actor, clock or thread inside, so it is tested directly.
class admission {
public:
  /// The limit of a device's slot; a device never seen gets `default_limit`.
  void set_limit(const std::string& key, int limit);
  [[nodiscard]] int limit(const std::string& key) const;

  /// Opens or closes a device: a closed one admits nothing (a worker that is away or draining),
  /// and its queue waits, in order, until it opens again. Devices are open unless closed. A device
  /// set with a closed device holds none of its other devices meanwhile: the runs behind it there
  /// go first, and it takes its place at their fronts again once every device of it is open.
  void set_open(const std::string& key, bool open);

  /// Puts `key` under shared budgets, `groups` (replacing the ones it had): a run starts on the key
  /// only while, in each of its groups, fewer than the group's limit of runs hold any of the
  /// group's keys. A card that several offerers share (the server and a worker, matched by UUID)
  /// is one group; so are a one-shot worker's devices (limit 1: it executes a single run).
  void set_groups(const std::string& key, const std::vector<std::string>& groups);
  /// The group's limit (at least 1); a group without one admits a single run at a time.
  void set_group_limit(const std::string& group, int limit);
  [[nodiscard]] int group_limit(const std::string& group) const;
  /// The keys under the group, by name.
  [[nodiscard]] std::vector<std::string> group_keys(const std::string& group) const;
  /// How many runs hold any of the group's keys.
  [[nodiscard]] std::size_t group_running(const std::string& group) const;

  /// Puts `key` under a memory ledger (a card shared by memory) or takes it out. A run that reaches
  /// the front of a gated key with room by count does not start yet: it is handed out once by
  /// take_asks() for the ledger to judge, and holds its place (nobody behind it passes) until
  /// grant() starts it, remove() takes it out (refused), or, told to wait(), ask_again() hands it
  /// out again. Taking the gate off hands nobody out and lets such runs start by count.
  void set_gated(const std::string& key, bool gated);
  [[nodiscard]] bool gated(const std::string& key) const;
  /// The runs admit() stopped at a gated key since the last call, oldest first, each once.
  [[nodiscard]] std::vector<std::string> take_asks();
  /// The ledger granted a handed-out run its memory: it starts at the next admit() that finds
  /// room. False when it is not a run waiting for an answer.
  bool grant(const std::string& run_id);
  /// The ledger told a handed-out run to wait: it keeps its place until ask_again().
  bool wait(const std::string& run_id);
  /// Memory freed on the key's card: a run told to wait there is handed out again.
  void ask_again(const std::string& key);

  /// Queues a run for its devices (one key, or a device set); its place is after every run queued
  /// before it. Returns false (and changes nothing) for an id already known or no keys.
  bool enqueue(const std::string& run_id, const std::vector<std::string>& keys);

  /// Whether a run queued for `key` alone now would start at once: the device is open, nobody
  /// waits for it (nor for another key of its groups) and it and its groups have room.
  [[nodiscard]] bool idle(const std::string& key) const;

  /// Records a run as holding its devices' slots already, whatever their limits or state: a run a
  /// worker kept executing while the server restarted. False for an id already known or no keys.
  bool hold(const std::string& run_id, const std::vector<std::string>& keys);

  /// Takes a waiting run out of every queue; false when it is not waiting (running or unknown).
  bool remove(const std::string& run_id);

  /// Admits every run that can start now, oldest first; returns the ones admitted by this call.
  [[nodiscard]] std::vector<std::string> admit();

  /// A run that held its slots ended; they are free for the next admit().
  void release(const std::string& run_id);

  /// 1-based place of a waiting run in the queue of its first device; 0 when it is not waiting.
  [[nodiscard]] std::size_t position(const std::string& run_id) const;

  /// Why a waiting run does not start now: a closed key of its first, else the first of its keys,
  /// in its order, that holds it, else the memory gate. It walks the run's queues: for a run
  /// object someone asked for, never on the admission path.
  [[nodiscard]] wait_cause why_waiting(const std::string& run_id) const;

  /// One device's queue as an operator sees it.
  struct slot_view {
    std::string key;
    int limit = 1;
    bool open = true;
    std::vector<std::string> running;
    std::vector<std::string> waiting;
    /// Its shared budgets, if any.
    std::vector<std::string> groups;
    /// Whether a memory ledger judges its runs (set_gated).
    bool gated = false;
  };
  /// Every device that has a limit or has seen a run, by key.
  [[nodiscard]] std::vector<slot_view> slots() const;

  int default_limit = 1;

private:
  struct slot {
    int limit = 0;  // 0: default_limit
    bool open = true;
    ranked_queue waiting;  // by the runs' seq
    /// The waiting runs that are not parked: the first holds the front (front_of).
    ranked_queue holding;
    std::set<std::string> running;
    std::vector<std::string> groups;
    bool gated = false;
  };
  struct group {
    int limit = 1;
    std::set<std::string> keys;
  };
  /// Where a run on a gated key stands with its ledger.
  enum class gate { none, asking, told_to_wait, granted };
  struct run {
    std::vector<std::string> keys;
    bool running = false;
    std::uint64_t seq = 0;  // submit order
    gate memory = gate::none;
  };

  slot& slot_of(const std::string& key);
  [[nodiscard]] int limit_of(const slot& s) const;
  [[nodiscard]] bool can_start(const std::string& run_id) const;
  /// A device set one of whose devices is closed: it keeps its places but holds no front.
  [[nodiscard]] bool parked(const run& r) const;
  /// The run at the front of `s` that holds it (not parked); null when none. O(log n).
  [[nodiscard]] const std::string* front_of(const slot& s) const;
  /// Whether the run may take its place on `s` now: open, at its front, room there and in its groups.
  [[nodiscard]] bool free_for(const std::string& run_id, const slot& s) const;
  /// Whether each of the key's groups has room for one more run.
  [[nodiscard]] bool groups_have_room(const slot& s) const;
  /// The runs that hold any of the group's keys.
  [[nodiscard]] std::set<std::string> group_holders(const std::string& group) const;
  /// What holds a waiting run on `key` by count or order (kind none: nothing, there).
  [[nodiscard]] wait_cause held_on(const std::string& run_id, const std::string& key) const;
  /// Marks every key of the groups of `key` as worth another look.
  void touch_groups(const std::string& key);
  [[nodiscard]] bool on_gated_key(const run& r) const;
  /// Moves a run from `from` to `to` and marks its keys; false when it is not in `from`.
  bool move_gate(const std::string& run_id, gate from, gate to);

  std::map<std::string, slot> slots_;
  std::unordered_map<std::string, run> runs_;
  std::map<std::string, group> groups_;
  std::uint64_t next_seq_ = 0;
  /// Keys whose front may have changed since the last admit().
  std::set<std::string> dirty_;
  /// Runs stopped at a gated key, for take_asks().
  std::vector<std::string> asks_;
};

} // namespace cdui::policy
