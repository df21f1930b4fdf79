#include "actors/slot_queue.hpp"

#include <algorithm>

namespace cdui::actors {

slot_queue::slot_queue(std::string key, int limit) : key_(std::move(key)), limit_(std::max(1, limit)) {}

void slot_queue::enqueue(const std::string& run_id) {
  waiting_.push_back(run_id);
}

bool slot_queue::remove(const std::string& run_id) {
  auto i = std::find(waiting_.begin(), waiting_.end(), run_id);
  if (i == waiting_.end())
    return false;
  waiting_.erase(i);
  return true;
}

std::vector<std::string> slot_queue::admit() {
  std::vector<std::string> admitted;
  while (!waiting_.empty() && running_.size() < static_cast<std::size_t>(limit_)) {
    admitted.push_back(waiting_.front());
    running_.insert(waiting_.front());
    waiting_.pop_front();
  }
  return admitted;
}

void slot_queue::release(const std::string& run_id) {
  running_.erase(run_id);
}

std::size_t slot_queue::position(const std::string& run_id) const {
  auto i = std::find(waiting_.begin(), waiting_.end(), run_id);
  return i == waiting_.end() ? 0 : static_cast<std::size_t>(i - waiting_.begin()) + 1;
}

} // namespace cdui::actors
