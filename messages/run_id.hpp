#pragma once

#include <functional>
#include <string>
#include <utility>

namespace cdui {

/// A run's id as the run queue keys its runs (policy::run_table): typed, so that an id is never
/// taken for a slot key, an editor session or a card, which are strings too. The text is the id
/// the API and the store use (run_store's new_run_id).
class run_id {
public:
  run_id() = default;
  explicit run_id(std::string text) : text_(std::move(text)) {}

  [[nodiscard]] const std::string& str() const { return text_; }
  [[nodiscard]] bool empty() const { return text_.empty(); }

  friend bool operator==(const run_id& a, const run_id& b) { return a.text_ == b.text_; }
  friend bool operator!=(const run_id& a, const run_id& b) { return a.text_ != b.text_; }
  friend bool operator<(const run_id& a, const run_id& b) { return a.text_ < b.text_; }

private:
  std::string text_;
};

} // namespace cdui

template <>
struct std::hash<cdui::run_id> {
  std::size_t operator()(const cdui::run_id& id) const noexcept { return std::hash<std::string>{}(id.str()); }
};
