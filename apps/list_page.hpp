#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cdui::apps {

/// One page of a list the HTTP API answers (GET /api/runs, /api/sweeps, /api/studies,
/// /api/workers): `limit` items from `offset`, so that a store of 10,000 runs or a server of 200
/// workers costs a page what a small one does.
struct list_page {
  std::uint64_t limit = 0;
  std::uint64_t offset = 0;

  /// The first index of a list of `size` items that the page holds, and one past its last.
  [[nodiscard]] std::pair<std::size_t, std::size_t> range(std::size_t size) const;

  /// The items of `all` on the page.
  template <class T>
  [[nodiscard]] std::vector<T> of(const std::vector<T>& all) const {
    auto [first, last] = range(all.size());
    return {all.begin() + static_cast<std::ptrdiff_t>(first), all.begin() + static_cast<std::ptrdiff_t>(last)};
  }
};

/// What a paged answer says beside its list of `total` items:
/// {<prefix>total, <prefix>limit, <prefix>offset}.
[[nodiscard]] nlohmann::json page_fields(const list_page& page, std::size_t total, const std::string& prefix = "");

} // namespace cdui::apps
