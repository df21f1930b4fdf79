#pragma once

// The agent actor's parts, internal to it: agent_actor.cpp (the connection, the runs' supervisors,
// the messages) and agent_reports.cpp (what it tells the server: its hello, a run's outputs).

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/agent/agent_actor.hpp"

namespace cdui::actors::agent_parts {

using self_ptr = agent_actor::stateful_pointer<agent_state>;
using steady = std::chrono::steady_clock;

/// Where its supervisors report: the socket once welcomed, else nowhere.
wire_link current_link(const agent_state& st);
/// Tells every supervisor where to report now (nowhere, when not welcomed).
void relink(self_ptr self);
/// Connects to `contact` on a new socket, dropping the old one (agent_connect.cpp).
void connect(self_ptr self, const server_contact& contact);
/// Finds the server (server.json or --server) and connects again when it has moved.
void check_endpoint(self_ptr self);

/// Where the agent keeps its runs' folders: <home>/agents/<name>/runs.
std::filesystem::path runs_dir(const agent_state& st);
/// Each offer's memory now: the host's RAM for the CPU (the first offer); for a card, what it has
/// free counting every process on it, another user's job included (a sim card's shared memory, a
/// CUDA card's driver figure).
void measure_device_memory(std::vector<device_offer>& offers);
/// The runs it has, executing or ended unreported, and held until a forgotten run has stopped: what
/// its hello and heartbeats list, so that the server resumes or forgets each.
std::vector<std::string> runs_held(const agent_state& st);
/// The hello it says now: its devices with their memory, its credential (read again each time),
/// the runs it holds.
hello make_hello(agent_state& st);
/// The outputs a record_outputs run left in its folder, for the server.
outputs_reply outputs_of(const agent_state& st, const std::string& run_id);
/// Why an --ephemeral agent's machine leaves, for its goodbye: "its agent stopped", and where
/// when it knows (a SLURM job's id and node, a Kubernetes pod's name, from their environment).
std::string leaving_reason();
/// Kills the processes of the run folder `dir`: its `cdui exec` and, under DDP, every other rank.
/// Whether the first was still running.
bool stop_run_processes(const std::filesystem::path& dir);

} // namespace cdui::actors::agent_parts
