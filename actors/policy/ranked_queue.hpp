#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cdui::policy {

/// One device's queue of waiting runs in submit order, each by its submit number (`seq`, unique and
/// increasing). A run's place, and taking one out from the middle (a cancel), cost O(log n)
/// instead of a walk of the queue: a 10,000-run sweep's status or cancel would otherwise be
/// quadratic (issue 16).
class ranked_queue {
public:
  ranked_queue();
  ~ranked_queue();
  ranked_queue(ranked_queue&&) noexcept;
  ranked_queue& operator=(ranked_queue&&) noexcept;
  ranked_queue(const ranked_queue&) = delete;
  ranked_queue& operator=(const ranked_queue&) = delete;

  /// Adds a run at the back; `seq` is larger than every seq in the queue (it is the newest).
  void push_back(std::uint64_t seq, const std::string& run_id);
  /// Takes the run with `seq` out, wherever it is; false when it is not there.
  bool erase(std::uint64_t seq);
  /// The run at the front; the queue must not be empty.
  [[nodiscard]] const std::string& front() const;
  void pop_front();
  [[nodiscard]] bool empty() const;
  [[nodiscard]] std::size_t size() const;
  /// 1-based place of the run with `seq`; 0 when it is not in the queue.
  [[nodiscard]] std::size_t place(std::uint64_t seq) const;
  /// The runs front first.
  [[nodiscard]] std::vector<std::string> ids() const;
  /// Adds a run wherever its `seq` puts it (nothing when it is there already).
  void insert(std::uint64_t seq, const std::string& run_id);

private:
  struct tree;
  std::unique_ptr<tree> tree_;
};

} // namespace cdui::policy
