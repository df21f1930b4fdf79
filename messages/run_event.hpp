#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/fields.hpp"

namespace cdui {

/// One entry of a run's event log. `data` is a JSON object as text, so that the vocabulary stays free
/// of any JSON library and travels unchanged through CAF, the wire and the store.
struct run_event {
  /// Position in the run's log, 1-based and gap-free; a reader asks for "everything after cursor".
  std::uint64_t cursor = 0;
  /// Milliseconds since the Unix epoch, when the event was appended.
  std::int64_t time_ms = 0;
  /// execution_start, node_status, node_config, progress, metric, run_warning,
  /// execution_complete, execution_error or execution_stopped.
  std::string type;
  std::string data;
  CDUI_FIELDS(cursor, time_ms, type, data)
};

/// The answer to "events after cursor": the events, and whether the run has ended (no more will come).
struct event_batch {
  std::vector<run_event> events;
  bool finished = false;
  CDUI_FIELDS(events, finished)
};

} // namespace cdui
