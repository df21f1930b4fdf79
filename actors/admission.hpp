#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace cdui::actors {

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
  /// and its queue waits, in order, until it opens again. Devices are open unless closed.
  void set_open(const std::string& key, bool open);

  /// Queues a run for its devices (one key, or a device set); its place is after every run queued
  /// before it. Returns false (and changes nothing) for an id already known or no keys.
  bool enqueue(const std::string& run_id, const std::vector<std::string>& keys);

  /// Whether a run queued for `key` alone now would start at once: the device is open, nobody
  /// waits for it and it has room.
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

  /// One device's queue as an operator sees it.
  struct slot_view {
    std::string key;
    int limit = 1;
    bool open = true;
    std::vector<std::string> running;
    std::vector<std::string> waiting;
  };
  /// Every device that has a limit or has seen a run, by key.
  [[nodiscard]] std::vector<slot_view> slots() const;

  int default_limit = 1;

private:
  struct slot {
    int limit = 0;  // 0: default_limit
    bool open = true;
    std::deque<std::string> waiting;
    std::set<std::string> running;
  };
  struct run {
    std::vector<std::string> keys;
    bool running = false;
  };

  slot& slot_of(const std::string& key);
  [[nodiscard]] int limit_of(const slot& s) const;
  [[nodiscard]] bool can_start(const std::string& run_id) const;

  std::map<std::string, slot> slots_;
  std::unordered_map<std::string, run> runs_;
  /// Keys whose front may have changed since the last admit().
  std::set<std::string> dirty_;
};

} // namespace cdui::actors
