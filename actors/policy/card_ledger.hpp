#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cdui::policy {

/// "6.0 GiB": a figure as refusals and wait reasons say it (one decimal, binary units).
[[nodiscard]] std::string gib_text(std::int64_t bytes);

/// A card as sentences name it, from what each offerer that shares it calls it, first to last:
/// "sim:0 on w1", or for a card several offerers share (one card, one ledger)
/// "sim:0 on w1 (same card as sim:0 on w2)", so a reason says whose runs count on it.
[[nodiscard]] std::string card_name(const std::vector<std::string>& offerer_names);

/// One card's memory ledger (docs/http-api.md, "Cards shared by memory"): the device_slot actor's
/// policy. Its total and free memory from the latest heartbeat (free counts every process on the
/// card, other users' jobs included), the budgets of runs assigned but not started (reserved) and
/// of runs that started (running), and the runs that hold it without a budget (they keep it to
/// themselves).
/// A run counts as its budget plus the card's context allowance, and fits when that sum is at most
/// min(free - reserved, total - reserved - running). Plain data: no actor, clock or thread.
class card_ledger {
public:
  struct config {
    /// The card as sentences name it: "cuda:1 on gpu-box", "sim:0 on this server".
    std::string name;
    /// What each run holds besides its budget (CUDA: its context, as runs on the card measured it,
    /// else CODEFYUI_EXECUTION_CUDA_CONTEXT_MIB: policy::context_to_count).
    std::int64_t context_bytes = 0;
    /// How the allowance is called: "CUDA context" on CUDA, "context" elsewhere.
    std::string context_name = "context";
    /// Why the card can never admit a run by its budget (policy::budget_refusal: an MPS card reports
    /// no memory total); empty: it can. Every budget is then refused with it.
    std::string cannot_budget{};
  };

  explicit card_ledger(config cfg) : cfg_(std::move(cfg)) {}

  /// Another name for the card in its texts: an offerer began or stopped sharing it (card_name).
  void rename(std::string name) { cfg_.name = std::move(name); }
  /// What each run counts besides its budget from now on, and how texts call it: a run on the card
  /// measured its CUDA context (policy::measured_contexts).
  void set_context(std::int64_t bytes, std::string name) {
    cfg_.context_bytes = bytes;
    cfg_.context_name = std::move(name);
  }

  /// The latest heartbeat's figures (bytes).
  void report(std::int64_t total, std::int64_t free);
  /// Whether a heartbeat gave its memory yet: a card that has not is judged once one does.
  [[nodiscard]] bool reported() const { return reported_; }

  /// What the ledger says of a budget now.
  /// fits now; waits (for runs to end or memory to free); never (more than the card has in all);
  /// pending (no heartbeat has given its memory yet: judged at the next one).
  enum class fit { fits, waits, never, pending };
  struct verdict {
    fit answer = fit::fits;
    /// Why it waits or never fits, as docs/http-api.md words it ("Why a run waits"); empty when it fits.
    std::string reason;
  };
  /// Whether a run with `budget` bytes fits now; `never` when budget plus context is more than the
  /// card has in all (no ending run would make room).
  [[nodiscard]] verdict judge(std::int64_t budget) const;

  /// A run assigned to the card with its budget (> 0), not started yet (reserved).
  void reserve(const std::string& run_id, std::int64_t budget);
  /// judge(), and reserve() when it fits: what a device slot does for a run asking for the card.
  verdict try_reserve(const std::string& run_id, std::int64_t budget);
  /// A reserved run started: its budget counts as running (a run adopted after a restart starts
  /// running at once: reserve then start).
  void start(const std::string& run_id);
  /// A run without a budget that holds the card (it started before the card was shared): nothing
  /// else is admitted by memory until it ends.
  void hold(const std::string& run_id);
  /// The run ended (or never started): its budget is free again. False for a run it does not hold.
  bool release(const std::string& run_id);

  [[nodiscard]] std::int64_t total() const { return total_; }
  [[nodiscard]] std::int64_t free() const { return free_; }
  [[nodiscard]] std::int64_t reserved() const;
  [[nodiscard]] std::int64_t running() const;
  /// min(free - reserved, total - reserved - running), at least 0.
  [[nodiscard]] std::int64_t available() const;
  /// What a new budget may take: available() with the context allowance taken off, at least 0.
  [[nodiscard]] std::int64_t may_take() const;

  struct holding {
    std::string run_id;
    std::int64_t budget = 0;  // 0: holds the card without a budget
    bool running = false;
  };
  /// The runs on the card, by id.
  [[nodiscard]] std::vector<holding> runs() const;
  [[nodiscard]] const config& settings() const { return cfg_; }

private:
  /// "needs 6.0 GiB (+0.8 GiB CUDA context)".
  [[nodiscard]] std::string needs(std::int64_t budget) const;
  /// " (runs a1b2c3d4, c3d4e5f6)", or nothing when it holds none.
  [[nodiscard]] std::string runs_text() const;

  config cfg_;
  bool reported_ = false;
  std::int64_t total_ = 0;
  std::int64_t free_ = 0;
  std::map<std::string, holding> runs_;
};

} // namespace cdui::policy
