#include "apps/http_resources.hpp"

#include <algorithm>
#include <exception>

#include "messages/text.hpp"

namespace cdui::apps {

bool query_number(const httplib::Request& req, httplib::Response& res, const char* name,
                  std::uint64_t& out, std::uint64_t min) {
  if (!req.has_param(name))
    return true;
  auto text = req.get_param_value(name);
  try {
    std::size_t used = 0;
    if (!text.empty() && text[0] != '-') {
      auto value = std::stoull(text, &used);
      if (used == text.size() && value >= min) {
        out = value;
        return true;
      }
    }
  } catch (const std::exception&) {
  }
  refuse(res, 400, std::string{"query parameter '"} + name + "' must be an integer of at least "
                     + std::to_string(min) + ", not " + text::quoted(text));
  return false;
}

page_request page_asked(const httplib::Request& req, httplib::Response& res, const std::string& prefix,
                        std::uint64_t default_limit) {
  auto limit_name = prefix + "limit";
  auto offset_name = prefix + "offset";
  list_page page{default_limit > 0 ? default_limit : max_page, 0};
  if (!query_number(req, res, limit_name.c_str(), page.limit, 1)
      || !query_number(req, res, offset_name.c_str(), page.offset))
    return {true, std::nullopt};
  if (default_limit == 0 && !req.has_param(limit_name) && !req.has_param(offset_name))
    return {};
  page.limit = std::min<std::uint64_t>(page.limit, max_page);
  return {false, page};
}

} // namespace cdui::apps
