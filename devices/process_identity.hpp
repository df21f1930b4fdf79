#pragma once
// Who a process is: its pid and its start time (from /proc), so that a pid the kernel has given to
// a later process is not taken for it. Plain POSIX, no torch.

#include <cstdint>

namespace cdui::devices {

/// A process as a sim card's slot knows it: a pid, and the start time that tells it from a later
/// process given the same pid.
struct process_identity {
  std::int32_t pid = 0;
  std::uint64_t start_time = 0;
};

/// This process's identity. Cached, since a sim card looks up its slot on every allocation of a run
/// (getpid is a system call each time), and read again in a forked child (another pid, a later
/// start).
[[nodiscard]] const process_identity& own_identity();

/// Whether process `pid` still runs: neither gone nor a zombie, and when `start_time` is not 0,
/// started then (not a later process that was given the same pid).
[[nodiscard]] bool process_alive(int pid, std::uint64_t start_time = 0);

} // namespace cdui::devices
