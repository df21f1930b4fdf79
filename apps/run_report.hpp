#pragma once

#include <string>

#include "messages/run_request.hpp"

namespace cdui::apps {

/// Prints how a run ended, as `cdui run` shows it on either runtime: "run <id> <status> in <S> s",
/// the final metrics, and for a failed run the reason on stderr.
void print_run_end(const run_info& run);

/// "final metrics:" and a line "  node.name = value" for each of `metrics_json` ({node: {name:
/// value}}); "" when there are none.
[[nodiscard]] std::string final_metrics_text(const std::string& metrics_json);

} // namespace cdui::apps
