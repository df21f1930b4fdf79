#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/run_request.hpp"

namespace cdui::apps {

/// Why a queued run waits beyond its place, or the first line of why a run failed or was
/// interrupted (its error, as squeue's REASON and kubectl's OOMKilled say it); "" otherwise.
[[nodiscard]] std::string reason_text(const run_info& run);

/// The run's memory budget per card as its options give it: "800.0 MiB", "1.20 GiB meas." (the
/// graph's measured default), "512.0 MiB est." (the static estimate); "-" without one.
[[nodiscard]] std::string budget_text(const run_info& run);

/// `cdui runs`: one line per run under a header, each column as wide as its widest cell (a
/// worker's device key "gpu-box/cuda:1" widens DEVICE). `wide` keeps whole names and reasons and
/// adds STARTED and ENDED; otherwise NAME and REASON are cut. `total` above the runs' count adds a
/// line saying so. `now_ms` is the clock the SECONDS of running runs are counted to.
[[nodiscard]] std::string runs_table(const std::vector<run_info>& runs, std::uint64_t total,
                                     bool wide, std::int64_t now_ms);

/// `cdui show`: the run one field a line (status, reason, queue, device and worker, what was asked,
/// budget, times, folder, error, final metrics); `folder` is its folder on this machine.
[[nodiscard]] std::string run_details(const run_info& run, const std::string& folder,
                                      std::int64_t now_ms);

} // namespace cdui::apps
