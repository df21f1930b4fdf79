#pragma once

#include <string>

#include "messages/run_request.hpp"

namespace cdui::apps {

/// Prints how a run ended, as `cdui run` shows it on either runtime: "run <id> <status> in <S> s",
/// the final metrics, and for a failed run the reason on stderr.
void print_run_end(const run_info& run);

} // namespace cdui::apps
