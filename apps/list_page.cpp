#include "apps/list_page.hpp"

#include <algorithm>

namespace cdui::apps {

std::pair<std::size_t, std::size_t> list_page::range(std::size_t size) const {
  auto first = static_cast<std::size_t>(std::min<std::uint64_t>(offset, size));
  auto last = static_cast<std::size_t>(std::min<std::uint64_t>(first + std::min<std::uint64_t>(limit, size), size));
  return {first, last};
}

nlohmann::json page_fields(const list_page& page, std::size_t total, const std::string& prefix) {
  return {{prefix + "total", total}, {prefix + "limit", page.limit}, {prefix + "offset", page.offset}};
}

} // namespace cdui::apps
