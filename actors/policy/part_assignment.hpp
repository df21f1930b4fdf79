#pragma once
// Whether a worker's part of a DDP run across workers can go to it (docs/ddp.md, "Across
// workers"): plain data, tested directly; the worker registry asks before it sends an assignment.

#include <optional>
#include <string>
#include <string_view>

#include "actors/policy/worker_table.hpp"
#include "messages/worker.hpp"

namespace cdui::policy {

/// Whether `host` is a loopback address written out: localhost, 127.0.0.0/8 or ::1 (a name is not
/// looked up).
[[nodiscard]] bool is_loopback_host(std::string_view host);

/// The machine a worker's hello says it runs on: its CPU offer's UUID ("cpu-<hostname>"); empty
/// when it offers none.
[[nodiscard]] std::string machine_of(const hello& h);

/// Why the assignment `a` cannot go to `worker` now: the worker is not connected (it went away
/// after the run was admitted; for a part of a run across workers, it was removed), or `a` is a
/// part of a run across workers whose ranks would meet at rank 0's store on a loopback address of
/// another machine (rank 0's worker's agent listens at 127.0.0.1: its --rendezvous-host must name
/// an address the part's machine reaches). Nothing when it can go.
[[nodiscard]] std::optional<std::string> assignment_refusal(const worker_table& table, const assign_run& a,
                                                            const std::string& worker);

} // namespace cdui::policy
