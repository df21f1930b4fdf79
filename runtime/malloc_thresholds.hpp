#pragma once
// glibc's malloc thresholds for a process that trains: blocks up to 32 MiB (the most glibc allows)
// come from the heap instead of a fresh mmap, and the heap keeps up to 256 MiB of free top instead
// of returning it at once, so that a training step's temporaries (a CNN's feature maps and im2col
// buffers, a checkpointed block's rerun) do not page-fault afresh every step. glibc raises both by
// itself only after a mapped block is freed. One-epoch CNN job: 44% fewer page faults, loop 6%
// faster; the MLP job unchanged (docs/benchmarks.md).
//
// The top pad is for the heaps of a thread's arena (a run trains on a thread of its own): glibc
// deletes such a heap as soon as it is wholly free unless the pad (not the trim threshold) says
// to keep it, so a step whose buffers outgrow the arena's first heap mapped a 64 MiB heap and
// unmapped it again every step (the CNN job: 850 heaps, 1.4 M page faults, 2-3 s of system time
// in one epoch). With a pad of one heap's size (64 MiB), the heap stays (docs/benchmarks.md).
// cdui's main sets them, and so do the benchmarks that train in their own process, so they
// measure what cdui runs.

#include <malloc.h>

namespace cdui::runtime {

inline constexpr int malloc_mmap_threshold = 32 << 20;
inline constexpr int malloc_trim_threshold = 256 << 20;
inline constexpr int malloc_top_pad = 64 << 20;

inline void set_malloc_thresholds() {
  ::mallopt(M_MMAP_THRESHOLD, malloc_mmap_threshold);
  ::mallopt(M_TRIM_THRESHOLD, malloc_trim_threshold);
  ::mallopt(M_TOP_PAD, malloc_top_pad);
}

} // namespace cdui::runtime
