#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "apps/run_reader.hpp"

namespace cdui::apps {

struct runs_options {
  std::string status;
  std::size_t limit = 20;
  /// Whole names and reasons, and the STARTED and ENDED columns.
  bool wide = false;
  /// The run objects as JSON ({"runs": [...], "total": N}) instead of the table.
  bool json = false;
};

/// `cdui runs`: the newest runs, from the server, else straight from the home's run store.
[[nodiscard]] int runs_command(const runs_options& options);

/// `cdui show RUN [--json]`: one run, field by field (or its run object).
[[nodiscard]] int show_command(const std::string& run, bool json);

/// `cdui logs RUN [-f]`: the run's output log (output.log's lines, from its events); with
/// `follow`, waits for the lines still to come until the run ends.
[[nodiscard]] int logs_command(const std::string& run, bool follow);

/// `cdui follow RUN`: the progress view of `cdui run`, for a run already submitted.
[[nodiscard]] int follow_command(const std::string& run);

/// Prints run `id`'s progress from its first event, as `cdui run` does, then how it ended. Ctrl+C
/// and `timeout_s` stop following (the run goes on). The exit code of `cdui run`.
[[nodiscard]] int follow_run(run_reader& reader, const std::string& id,
                             std::optional<double> timeout_s);

} // namespace cdui::apps
