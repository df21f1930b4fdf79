#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>
#include <cstdint>

namespace cdui::devices {

enum class device_kind { cpu, cuda, mps, sim, auto_select };

/// A device string as the user wrote it, parsed. `index` is absent for a bare kind ("cuda") and for a
/// kind whose index could not be read ("cuda:abc"); `malformed` tells the two apart.
struct device_spec {
  device_kind kind = device_kind::cpu;
  std::optional<int> index;
  bool malformed = false;
  std::string text;
};

/// Why a device string means nothing at all (not even a device kind).
struct device_parse_error {
  std::string message;
};

/// Parses cpu, auto, cuda, cuda:N, mps, mps:N, sim, sim:N. A string with a known prefix and an
/// unreadable index ("cuda:", "cuda:abc", "cuda:0:1", "cuda: 0") parses as that kind, malformed:
/// it is still an unambiguous request for that kind of device.
[[nodiscard]] std::variant<device_spec, device_parse_error> parse_device(std::string_view text);

/// The kind part of a device name, as written: "sim" of "sim:1", "cpu" of "cpu".
[[nodiscard]] std::string kind_of(std::string_view device);

/// This machine's host name; empty when it has none.
[[nodiscard]] std::string host_name();

/// What this host offers, as far as device resolution is concerned.
struct host_devices {
  int cuda_count = 0;
  int current_cuda = 0;
  bool has_mps = false;
  int sim_count = 0;
  /// Each simulated card's memory, by index (sim_count entries).
  std::vector<std::int64_t> sim_total_bytes;
};

/// The device a run or node executes on, and the sentence to record when it is not what was asked.
struct resolved_device {
  /// Canonical name: cpu, cuda:N, mps:0 or sim:N. Also the key of the device's run queue.
  std::string name;
  /// A run_warning of kind device_fallback, when the request could not be honoured as written.
  std::optional<std::string> fallback_warning;
};

/// Resolves a parsed device against the host, with the fallback rules of the training-memory seed:
/// an accelerator kind the host lacks falls back to the CPU; a bad or out-of-range index of a kind the
/// host has falls back to that kind's current device, never to the CPU.
[[nodiscard]] resolved_device resolve_device(const device_spec& spec, const host_devices& host);

/// The device_fallback sentence of a node in a run on a worker, which sees its cards renumbered
/// from 0 (docs/workers.md, "What the run sees: its cards, renumbered"): what the node is set to,
/// the run's cards and which of the worker's cards they are, and where it runs. `aliases`: each of
/// the run's names -> the worker's (run.json's device_aliases). The caller names the node before it:
/// "is set to device cuda:1; this run has 1 card (cuda:0 = the worker's cuda:1), so when it
/// executes, it runs on cuda:0."
[[nodiscard]] std::string worker_run_fallback(const std::string& requested,
                                              const std::map<std::string, std::string>& aliases,
                                              const std::string& runs_on);

/// One device this host offers to runs.
struct offered_device {
  std::string name;   // cpu, cuda:0, sim:1
  std::string label;  // what a listing shows
  /// Runs admitted at once: two on the CPU, one on an accelerator (docs/http-api.md, "One FIFO per device").
  int slot_limit = 1;
  bool simulated = false;
  /// The card's memory in bytes; 0 when not known (the CPU).
  std::int64_t total_bytes = 0;
  std::string uuid;
  /// A CUDA card's compute capability, from the driver; 0.0 when not known (not a CUDA card).
  int compute_major = 0;
  int compute_minor = 0;
};

/// The CPU admits two runs at a time (docs/http-api.md, "One FIFO per device").
inline constexpr int cpu_slot_limit = 2;
/// An accelerator admits one run at a time.
inline constexpr int accelerator_slot_limit = 1;

/// Intra-op threads for one run that computes on the CPU, on `cpu` or on a sim card, on a host of
/// `cores` cores with `sim_cards` sim cards: the CPU's slots and the sim cards (whose runs execute
/// on the CPU too) share the cores, so that all of them busy at once use each core once; at least
/// 1. (Two such runs on 2 cores at 2 threads each: the Fashion-MNIST CNN 1.4 times slower than at
/// one; docs/benchmarks.md, "Intra-op threads".)
[[nodiscard]] constexpr int cpu_share(int cores, int sim_cards) {
  return std::max(1, cores / (cpu_slot_limit + std::max(0, sim_cards)));
}

} // namespace cdui::devices
