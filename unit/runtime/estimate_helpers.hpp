#pragma once
// What the estimate's tests ask of it: the estimate of a graph document, and one term's bytes.

#include <string>

#include "runtime/estimate.hpp"
#include "unit/runtime/run_helpers.hpp"

namespace cdui::test {

inline runtime::memory_estimate estimate(const nlohmann::json& doc, runtime::estimate_options options = {}) {
  return runtime::estimate_memory(require_valid(doc), options);
}

/// The bytes of the term `name`; -1 when the estimate has none.
inline std::int64_t term(const runtime::memory_estimate& e, const std::string& name) {
  for (const auto& t : e.terms)
    if (t.name == name)
      return t.bytes;
  return -1;
}

} // namespace cdui::test
