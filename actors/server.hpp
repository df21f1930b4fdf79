#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/run_event.hpp"
#include "messages/run_outcome.hpp"
#include "messages/run_request.hpp"

namespace cdui {

/// The embeddable cdui runtime: an actor system with the run queue, its device slots and the runs.
/// The CLI's embedded mode and the tests use it; a lab service can link it the same way. Every
/// member function is thread-safe and blocks only its caller.
class server {
public:
  struct config {
    /// Where runs/<id>/ folders go; default: $CODEFYUI_HOME, else ~/.cdui.
    std::filesystem::path home;
    /// CAF scheduler threads; 0: one per core of the host.
    int scheduler_threads = 0;
    /// Simulated accelerators, e.g. "2x8GiB"; empty: $CODEFYUI_SIM_DEVICES. A bad spec throws
    /// std::invalid_argument from the constructor, naming the entry.
    std::string sim_devices;
  };

  server();
  explicit server(config cfg);
  /// Cancels every run that has not ended and waits for them, then stops the actor system.
  ~server();

  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Validates and queues a run; the result holds its id or why it was refused.
  [[nodiscard]] submit_result submit(run_request request);

  /// The run's current state; nullopt for an unknown id.
  [[nodiscard]] std::optional<run_info> info(const std::string& run_id);

  /// Every run, in submit order.
  [[nodiscard]] std::vector<run_info> runs();

  /// Events after `cursor`; waits up to `wait` for the first one unless the run has ended.
  [[nodiscard]] event_batch events(const std::string& run_id, std::uint64_t cursor,
                                   std::chrono::milliseconds wait = std::chrono::milliseconds{0});

  /// Blocks until the run has ended and returns its final state.
  run_info wait(const std::string& run_id);

  /// Asks a run to stop: a queued one leaves its queue, a running one stops between batches.
  /// False when the run had already ended (or was already cancelled).
  bool cancel(const std::string& run_id);

  [[nodiscard]] const std::filesystem::path& home() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace cdui
