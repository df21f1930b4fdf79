#include "storage/lru_store.hpp"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <system_error>

namespace cdui::storage {

budget_reading read_budget(const store_budget& defaults) {
  budget_reading reading{defaults, {}};
  const std::string var{defaults.env_var};
  const char* raw = std::getenv(var.c_str());
  if (raw == nullptr || *raw == '\0')
    return reading;
  const std::string_view text{raw};
  std::int64_t mb = -1;
  // Digits only: from_chars alone would take "-5" and stop quietly at "12abc".
  if (text.find_first_not_of("0123456789") == std::string_view::npos) {
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), mb);
    if (error != std::errc{} || end != text.data() + text.size())
      mb = -1;
  }
  if (mb < 0 || mb > std::numeric_limits<std::int64_t>::max() / bytes_per_mb) {
    reading.warning = var + " is '" + std::string{text} + "', not a whole number of MB; the "
                      + std::string{defaults.name} + " keeps its budget of "
                      + std::to_string(defaults.max_bytes / bytes_per_mb) + " MB.";
    return reading;
  }
  reading.budget.max_bytes = mb * bytes_per_mb;
  return reading;
}

} // namespace cdui::storage
