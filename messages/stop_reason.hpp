#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "messages/run_status.hpp"

namespace cdui {

/// Why a run ended without completing: the one word execution_stopped carries as `reason`, for
/// clients to match on (issue 15, section 9); the sentence for people goes in `message`. A closed
/// set: a new case is a new word here and in the docs' event tables.
enum class stop_reason {
  cancelled,    // a cancel: while it ran, before it started, or while its worker was not connected
  interrupted,  // the server stopped while it ran (cdui stop, or a death the next start found)
  timeout,      // it did not reach a stop check within the stop deadline and was ended without it
  given_up,     // its worker was not connected for the resume grace
  not_placed,   // it failed before it started: nothing can take it (a card or worker gone, a
                // memory budget no card holds, a restart that could not queue it again)
  pruned,       // its study's pruner stopped it: it fell behind (the message says how)
  worker_left,  // its worker left with its machine (an --ephemeral agent's allocation or pod ended)
};

[[nodiscard]] const char* to_string(stop_reason r);

/// The word's stop_reason; nullopt for anything else (an older server's sentence).
[[nodiscard]] std::optional<stop_reason> parse_stop_reason(std::string_view word);

/// The word of a run a stop ended with `status`, when nothing more precise is known: a cancel
/// for `cancelled`, a study's pruner for `pruned`, the server's stop otherwise.
[[nodiscard]] stop_reason stop_reason_of(run_status status);

/// execution_stopped's data: {"reason": the word, "message": the sentence}.
[[nodiscard]] nlohmann::json stopped_data(stop_reason r, const std::string& message);

/// The word of an execution_stopped's data; nullopt for an older server's event, whose `reason`
/// was a sentence.
[[nodiscard]] std::optional<stop_reason> stopped_reason(const nlohmann::json& data);

/// The sentence of an execution_stopped's data. An older server stored the sentence as `reason`
/// and no `message`: that sentence, then.
[[nodiscard]] std::string stopped_message(const nlohmann::json& data);

} // namespace cdui
