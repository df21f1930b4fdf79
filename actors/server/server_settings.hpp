#pragma once
// The server's settings from its config and the environment, read once as it starts
// (docs/cli.md lists the variables): the actor system's config, numbers in their ranges, the
// stores' budgets, the run queue's config with this server's cards.

#include <cstdint>
#include <memory>

#include <caf/actor_system_config.hpp>

#include "actors/common/env_settings.hpp"
#include "actors/server/run_queue.hpp"
#include "actors/server/server.hpp"
#include "storage/lru_store.hpp"

namespace cdui::setup {

/// The actor system's config: the scheduler threads, a quiet logger, idle workers that wait.
caf::actor_system_config make_config(const server::config& c);

using actors::number_setting;
using actors::seconds_setting;

/// A store's budget from its setting; a bad value keeps the default, with a logged warning.
storage::store_budget budget_from_env(const storage::store_budget& defaults);

/// The run queue's config: this server's cards (probed, or the sim cards asked for), slot limits,
/// the interactive limit, stop deadline and context allowances from the environment, and how this
/// server's own shared cards are measured.
actors::run_queue_config make_queue_config(const server::config& c, const std::filesystem::path& home,
                                           std::shared_ptr<storage::run_store> store);

} // namespace cdui::setup
