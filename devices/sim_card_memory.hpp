#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "devices/process_identity.hpp"

namespace cdui::devices {

namespace detail {
struct sim_card_segment;
}

/// The memory of one simulated card, counted across processes as a real card's is: every process
/// that allocates on the card (the server, an agent, a run's process, `cdui sim-hold`) charges one
/// POSIX shared-memory segment named after the card's UUID ("/dev/shm/cdui-sim-<UUID>", 0600), so
/// each of them sees what all of them hold and none can take the card past its total. The segment
/// keeps each process's bytes in a slot of its own, so a process that dies holding memory (a
/// crash, SIGKILL) gives its bytes back at the next look (its slot is reclaimed). The last process
/// that held memory on the card removes the segment (remove_if_last); docs/training-memory.md,
/// "One card, many processes".
class sim_card_memory {
public:
  using open_result = std::variant<std::shared_ptr<sim_card_memory>, std::string>;

  /// Maps the segment of card `uuid`, creating it when `create` (else a null pointer when there is
  /// none). `total_bytes` is the card's memory, enforced on every charge, and written into the
  /// segment when it has none yet; 0 takes the segment's (none: unbounded, for a holder from
  /// outside on a card that no process knowing its size has opened). The error says why: a UUID
  /// that names nothing, a segment of another user or of another layout, a system call that failed.
  [[nodiscard]] static open_result open(const std::string& uuid, std::int64_t total_bytes,
                                        bool create = true);

  /// Deletes the segment of card `uuid` (processes that have it mapped keep their mapping, but no
  /// process opens it again); false when there was none.
  static bool remove(const std::string& uuid);

  /// The segment's name: "/cdui-sim-" and the UUID, with every character outside letters, digits,
  /// '.', '_' and '-' made '_' (and then a digest of the UUID added, so two UUIDs never share one).
  [[nodiscard]] static std::string segment_name(std::string_view uuid);

  ~sim_card_memory();
  sim_card_memory(const sim_card_memory&) = delete;
  sim_card_memory& operator=(const sim_card_memory&) = delete;

  /// Charges n bytes to this process; false (nothing charged) when every process's bytes and n
  /// would pass the total, or when the card already has a slot for as many processes as it holds.
  [[nodiscard]] bool charge(std::int64_t n);
  /// Gives back n bytes this process charged.
  void credit(std::int64_t n);

  /// Bytes held by every live process (dead ones' bytes reclaimed first).
  [[nodiscard]] std::int64_t used();
  /// total - used, at least 0; for an unbounded card 0.
  [[nodiscard]] std::int64_t free_bytes();
  /// Bytes this process holds.
  [[nodiscard]] std::int64_t held_here();

  /// Deletes the card's segment unless another live process has charged it (this process is done
  /// with the card: it is ending); whether it did. A process that charges the card for the first
  /// time after that creates the segment anew, so the card's count never splits in two.
  bool remove_if_last();

  [[nodiscard]] std::int64_t total() const { return total_; }
  [[nodiscard]] const std::string& uuid() const { return uuid_; }

private:
  /// A mapping of the card's segment, and the segment file's inode (which tells whether the card's
  /// name still leads to it). `segment` null: none.
  struct mapping {
    detail::sim_card_segment* segment = nullptr;
    std::uint64_t inode = 0;
  };
  using map_result = std::variant<mapping, std::string>;

  [[nodiscard]] static map_result map_card(const std::string& uuid, std::int64_t total_bytes, bool create);
  sim_card_memory(std::string uuid, std::int64_t total, mapping m);
  [[nodiscard]] bool still_named(const mapping& m) const;
  /// Maps the segment the card's name leads to now, in place of `stale`.
  void remap(const mapping* stale);

  std::string uuid_;
  std::int64_t total_;
  std::atomic<const mapping*> current_{nullptr};
  std::mutex remap_mutex_;
  /// Every mapping this object made, unmapped with it (a thread may still be reading an old one).
  std::vector<std::unique_ptr<mapping>> mappings_;
};


} // namespace cdui::devices
