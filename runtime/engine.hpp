#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "devices/device.hpp"
#include "messages/run_outcome.hpp"
#include "runtime/run_stores.hpp"
#include "runtime/validate.hpp"

namespace cdui::runtime {

/// Receives a run's events as they happen: the event type and its data object.
using event_sink = std::function<void(const std::string& type, const nlohmann::json& data)>;

/// One process of a run trained with DDP (a TrainingLoop with strategy ddp; docs/ddp.md): rank k
/// of world_size trains on devices[k].
struct ddp_rank {
  int rank = 0;
  /// 1: the run is one process, and a ddp loop trains single (saying so).
  int world_size = 1;
  /// Within one worker: the c10d FileStore the ranks meet at, in the run's folder.
  std::filesystem::path rendezvous;
  /// Across workers (store_host set): rank 0's c10d TCPStore. Rank 0 hosts it at store_host and
  /// store_port (0: a free port, which it reports in a ddp_rendezvous event); the others connect.
  std::string store_host;
  int store_port = 0;
  /// The run's secret: across workers the store's keys are under its hash, so only a rank that has
  /// it finds the others.
  std::string secret;
  /// Every rank's card, as the run reports them ("w2/sim:0" across workers).
  std::vector<std::string> devices;
  /// This rank's card, as this process names it (devices[rank] within one worker).
  std::string device;
  /// How long a collective (the first one included) waits for every rank (CODEFYUI_DDP_TIMEOUT_S).
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
};

/// Everything the engine needs to execute one run; it knows nothing of actors or sockets.
struct run_context {
  std::string run_id;
  /// Where the run's files go (checkpoints/ inside it); relative paths of saver nodes resolve here.
  std::filesystem::path run_dir;
  /// The home the run belongs to ($CODEFYUI_HOME): nodes never read or write its own files
  /// (runtime/file_access.hpp). Empty: found from run_dir when that is <home>/runs/<id> or
  /// <home>/agents/<name>/runs/<id>.
  std::filesystem::path home;
  /// The run's device; a node whose device param the graph leaves out uses it. Empty: cpu.
  std::string device;
  /// A run on a worker: each of the run's device names -> the worker's (run.json's device_aliases;
  /// the run sees its cards renumbered from 0). Empty: the run sees the machine's names.
  std::map<std::string, std::string> device_aliases;
  /// The device whose slot the run holds (its queue key), reported in execution_start; empty: the
  /// run's device.
  std::string slot;
  std::uint64_t seed = 0;
  /// Intra-op threads when a node does not set num_threads: the cores of the run's slot.
  int num_threads = 1;
  devices::host_devices host;
  /// Set to ask the run to stop; honoured between batches and between nodes.
  std::shared_ptr<const std::atomic<bool>> stop;
  /// Set together with `stop` when the server is shutting down: the run ends interrupted, not
  /// cancelled (the user did not ask for it).
  std::shared_ptr<const std::atomic<bool>> interrupt;
  /// Asks libtorch for deterministic algorithms while the run executes (process-wide, so it stays on
  /// while any deterministic run is executing).
  bool deterministic = false;
  /// The server's in-memory stores; null: the run uses none. The flags below say which it uses.
  std::shared_ptr<run_stores> stores;
  /// An interactive run of an editor session: a node whose key (runtime/node_keys.hpp) the
  /// session's execution cache holds is not executed again; its cached outputs are used.
  bool execution_cache = false;
  /// Each model node starts from the weights it left in the node state store, and leaves its
  /// weights there when the run ends (unless it failed).
  bool weights_persistent = false;
  /// Every node's outputs go to the run output store when the run ends.
  bool record_outputs = false;
  /// The run's memory budget per card (options.target.memory_gib), in bytes; 0: none. On a sim card
  /// and the CPU the TrainingLoop's allocator scope is capped at it (and at the card's size), so a
  /// run that outgrows it runs out of memory alone.
  std::int64_t memory_budget = 0;
  /// Where the budget came from, as the out-of-memory text says it: typed, measured or estimate.
  std::string memory_budget_source = "typed";
  /// This process's rank when the run trains with DDP.
  ddp_rank ddp;
  /// Continue from a TrainingLoop checkpoint (options.resume_from, `cdui run --resume`): a
  /// checkpoint file, or a run's folder (or its checkpoints/) whose newest checkpoint of each loop
  /// counts. Empty: train from the start. Read by the file rules of a CheckpointLoader.
  std::filesystem::path resume_from;
  event_sink emit;
};

/// Whether libtorch's deterministic algorithms are on in this process now.
[[nodiscard]] bool deterministic_algorithms_enabled();

/// Sets the intra-op threads of the calling thread only (other runs' threads keep theirs).
void set_intra_op_threads(int n);

/// What a DDP rank other than 0 executes of a graph (docs/ddp.md: rank 0 is the run; the other ranks
/// execute the TrainingLoops whose strategy is ddp and the nodes that feed them, and no node after
/// them): the same graph with its execution order cut to those nodes.
[[nodiscard]] validated_graph ddp_rank_part(const validated_graph& graph);

/// Why a graph cannot train with DDP, or nullopt: two TrainingLoops with strategy ddp on separate
/// branches (neither feeds the other) would train at the same time over one set of ranks. One after
/// the other (one loop's model into the next) is fine.
[[nodiscard]] std::optional<std::string> ddp_conflict(const validated_graph& graph);

/// Executes a validated graph node by node in topological order, emitting execution_start,
/// node_status, progress, metric, run_warning and exactly one of execution_complete,
/// execution_error or execution_stopped. Never throws: a node's failure is the run's outcome.
[[nodiscard]] run_outcome execute(const validated_graph& graph, const run_context& ctx);

} // namespace cdui::runtime
