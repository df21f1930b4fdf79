#pragma once
// The server's settings from its config and the environment, read once as it starts
// (docs/cli.md lists the variables): the actor system's config, numbers in their ranges, the
// stores' budgets, the run queue's config with this server's cards.

#include <cstdint>
#include <memory>

#include <caf/actor_system_config.hpp>

#include "actors/server/run_queue.hpp"
#include "actors/server/server.hpp"
#include "storage/lru_store.hpp"

namespace cdui::setup {

/// The actor system's config: the scheduler threads, a quiet logger, idle workers that wait.
caf::actor_system_config make_config(const server::config& c);

/// A number from the environment variable `var`, from `min` to `max` (a whole one when `whole`):
/// `fallback` when it is unset, and also, with a warning in the log naming the `unit`, when it is
/// not such a number.
double number_setting(const char* var, double fallback, double min, double max, const char* unit,
                      bool whole = false);

/// A number of seconds from an environment variable, in ms (number_setting).
std::int64_t seconds_setting(const char* var, double default_seconds, double min, double max);

/// A store's budget from its setting; a bad value keeps the default, with a logged warning.
storage::store_budget budget_from_env(const storage::store_budget& defaults);

/// The run queue's config: this server's cards (probed, or the sim cards asked for), slot limits,
/// the interactive limit, stop deadline and context allowances from the environment, and how this
/// server's own shared cards are measured.
actors::run_queue_config make_queue_config(const server::config& c, const std::filesystem::path& home,
                                           std::shared_ptr<storage::run_store> store);

} // namespace cdui::setup
