#pragma once

#include <cstddef>
#include <deque>
#include <set>
#include <string>
#include <vector>

namespace cdui::actors {

/// The admission policy of one device slot: runs wait in submit order and at most `limit` hold the
/// slot at once. Plain data: no actor, clock or thread inside, so it is tested directly.
class slot_queue {
public:
  slot_queue() = default;
  slot_queue(std::string key, int limit);

  void enqueue(const std::string& run_id);

  /// Takes a waiting run out of the queue; false when it is not waiting (running or unknown).
  bool remove(const std::string& run_id);

  /// Admits waiting runs, oldest first, while the slot has room; returns the ones admitted now.
  [[nodiscard]] std::vector<std::string> admit();

  /// A run that held the slot ended; its place is free for the next admit().
  void release(const std::string& run_id);

  /// 1-based position of a waiting run, 0 when it is not waiting.
  [[nodiscard]] std::size_t position(const std::string& run_id) const;

  [[nodiscard]] const std::string& key() const { return key_; }
  [[nodiscard]] int limit() const { return limit_; }
  [[nodiscard]] std::size_t waiting() const { return waiting_.size(); }
  [[nodiscard]] std::size_t running() const { return running_.size(); }

private:
  std::string key_;
  int limit_ = 1;
  std::deque<std::string> waiting_;
  std::set<std::string> running_;
};

} // namespace cdui::actors
