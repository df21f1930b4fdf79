#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "messages/run_request.hpp"

namespace cdui::apps {

/// The run a word on the command line names, or why it names none: `id` set, or `error` set.
struct run_lookup {
  std::string id;
  std::string error;
};

/// Finds the run a person means by `word` among `runs` (newest first): its whole id, else a unique
/// run name, else a unique prefix of an id (as `docker` and `git` take them). A word that several
/// runs match is refused with the matches listed, so that nothing is done to the wrong run.
[[nodiscard]] run_lookup find_run(std::string_view word, const std::vector<run_info>& runs);

} // namespace cdui::apps
