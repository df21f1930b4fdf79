#pragma once
// Numbers from environment variables, as the server and the agent read their settings once when
// they start (docs/cli.md lists the variables).

#include <cstdint>
#include <string>

namespace cdui::actors {

/// A number from the environment variable `var`, from `min` to `max` (a whole one when `whole`):
/// `fallback` when it is unset, and also, with a warning in the log naming the `unit`, when it is
/// not such a number.
double number_setting(const char* var, double fallback, double min, double max, const char* unit,
                      bool whole = false);

/// A number of seconds from an environment variable, in ms (number_setting).
std::int64_t seconds_setting(const char* var, double default_seconds, double min, double max);

/// CODEFYUI_STOP_DEADLINE_S, in ms (default_stop_deadline_ms when unset): how long a run asked to
/// stop has, on the server for the runs it executes, on an agent for its runs.
std::int64_t stop_deadline_setting();

/// `ms` as the seconds a message gives: "10", "0.2".
std::string seconds_text(std::int64_t ms);

} // namespace cdui::actors
