#include "devices/sim_card_memory.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "messages/digest.hpp"

namespace cdui::devices {

namespace detail {

/// The processes one card can count at once; a 65th is refused its first charge.
inline constexpr int sim_card_process_slots = 64;

/// One process's bytes on the card. `pid` 0: a free slot.
struct sim_card_slot {
  std::int32_t pid;
  std::uint64_t start_time;  // the process's start, from /proc/<pid>/stat: a reused pid is not it
  std::int64_t bytes;
};

/// The segment's layout. Everything but `ready` is read and written under `lock`, a
/// process-shared robust mutex: a process that dies holding it leaves it to the next, which
/// reclaims the dead processes' slots before it goes on.
struct sim_card_segment {
  std::atomic<std::uint32_t> ready;  // the creator sets it last, to ready_mark
  std::uint32_t layout;
  std::int64_t total;  // the creator's figure; 0: none
  pthread_mutex_t lock;
  sim_card_slot slots[sim_card_process_slots];
};

inline constexpr std::uint32_t ready_mark = 0x63647369;  // "cdsi"
inline constexpr std::uint32_t layout_version = 1;

} // namespace detail

namespace {

using detail::sim_card_segment;
using detail::sim_card_slot;

/// How long an opener waits for a segment's creator to finish setting it up.
constexpr auto creator_grace = std::chrono::seconds(2);
/// Segment names keep UUIDs up to this long as they are (NAME_MAX is 255).
constexpr std::size_t longest_plain_uuid = 128;

/// Holds the segment's lock; a dead holder's slots are reclaimed before the lock is made
/// consistent again.
class segment_lock {
public:
  explicit segment_lock(sim_card_segment& s);
  ~segment_lock() { ::pthread_mutex_unlock(&s_.lock); }
  segment_lock(const segment_lock&) = delete;
  segment_lock& operator=(const segment_lock&) = delete;

private:
  sim_card_segment& s_;
};

/// Frees the slots of processes that ended; whether any held bytes. Under the lock.
bool reclaim_dead(sim_card_segment& s) {
  bool freed = false;
  for (auto& slot : s.slots) {
    if (slot.pid == 0 || process_alive(slot.pid, slot.start_time))
      continue;
    freed = freed || slot.bytes != 0;
    slot = {0, 0, 0};
  }
  return freed;
}

segment_lock::segment_lock(sim_card_segment& s) : s_(s) {
  int rc = ::pthread_mutex_lock(&s.lock);
  if (rc == EOWNERDEAD) {
    reclaim_dead(s);
    ::pthread_mutex_consistent(&s.lock);
  } else if (rc != 0) {
    throw std::runtime_error("sim card memory: cannot lock its segment: " + std::string{std::strerror(rc)});
  }
}

std::int64_t used_bytes(const sim_card_segment& s) {
  std::int64_t used = 0;
  for (const auto& slot : s.slots)
    used += slot.bytes;
  return used;
}

/// This process's slot, claimed when it has none; nullptr when every slot is taken. Under the lock.
sim_card_slot* own_slot(sim_card_segment& s, bool claim) {
  auto [pid, start] = own_identity();
  for (auto& slot : s.slots)
    if (slot.pid == pid && slot.start_time == start)
      return &slot;
  if (!claim)
    return nullptr;
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (auto& slot : s.slots)
      if (slot.pid == 0) {
        slot = {pid, start, 0};
        return &slot;
      }
    reclaim_dead(s);
  }
  return nullptr;
}

std::string system_error(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

/// Sets up a segment this process just created: its lock, its total, then the ready mark.
void set_up(sim_card_segment& s, std::int64_t total) {
  pthread_mutexattr_t attr;
  ::pthread_mutexattr_init(&attr);
  ::pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  ::pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  ::pthread_mutex_init(&s.lock, &attr);
  ::pthread_mutexattr_destroy(&attr);
  s.layout = detail::layout_version;
  s.total = total;
  s.ready.store(detail::ready_mark, std::memory_order_release);
}

/// Maps an open segment file, waiting for its creator to size it and set it up.
std::variant<sim_card_segment*, std::string> map_segment(int fd, const std::string& name) {
  auto deadline = std::chrono::steady_clock::now() + creator_grace;
  struct stat st {};
  while (true) {
    if (::fstat(fd, &st) != 0)
      return system_error("cannot read " + name);
    if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
      return "/dev/shm" + name + " belongs to another user or can be read by others; cdui uses "
             "only its own private (0600) segments";
    if (static_cast<std::size_t>(st.st_size) >= sizeof(sim_card_segment))
      break;
    if (std::chrono::steady_clock::now() >= deadline)
      return "/dev/shm" + name + " is not a cdui sim card segment (its size is "
             + std::to_string(st.st_size) + " bytes); remove it";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void* at = ::mmap(nullptr, sizeof(sim_card_segment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED)
    return system_error("cannot map " + name);
  auto* s = static_cast<sim_card_segment*>(at);
  while (s->ready.load(std::memory_order_acquire) != detail::ready_mark
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (s->ready.load(std::memory_order_acquire) != detail::ready_mark
      || s->layout != detail::layout_version) {
    ::munmap(at, sizeof(sim_card_segment));
    return "/dev/shm" + name + " is not a sim card segment of this cdui version; remove it";
  }
  return s;
}

} // namespace

std::string sim_card_memory::segment_name(std::string_view uuid) {
  std::string safe{uuid};
  bool changed = safe.size() > longest_plain_uuid;
  if (changed)
    safe.resize(longest_plain_uuid);
  for (auto& c : safe) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                 || c == '.' || c == '_' || c == '-';
    if (!plain) {
      c = '_';
      changed = true;
    }
  }
  return "/cdui-sim-" + safe + (changed ? "-" + fnv1a_hex(uuid) : "");
}

sim_card_memory::open_result sim_card_memory::open(const std::string& uuid, std::int64_t total_bytes,
                                                   bool create) {
  if (uuid.empty())
    return std::string{"a sim card needs a UUID"};
  if (total_bytes < 0)
    return "sim card " + uuid + ": a total below 0 bytes";
  auto opened = map_card(uuid, total_bytes, create);
  if (auto* err = std::get_if<std::string>(&opened))
    return *err;
  auto m = std::get<mapping>(opened);
  if (m.segment == nullptr)
    return std::shared_ptr<sim_card_memory>{};
  auto total = total_bytes;
  if (total == 0) {
    segment_lock lock{*m.segment};
    total = m.segment->total;
  }
  return std::shared_ptr<sim_card_memory>(new sim_card_memory(uuid, total, m));
}

sim_card_memory::map_result sim_card_memory::map_card(const std::string& uuid, std::int64_t total_bytes,
                                                      bool create) {
  auto name = segment_name(uuid);
  // Create it, or open the one another process created; one unlinked in between is created again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    bool created = false;
    int fd = -1;
    if (create) {
      fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      created = fd >= 0;
      if (fd < 0 && errno != EEXIST)
        return system_error("sim card " + uuid + ": cannot create /dev/shm" + name);
    }
    if (fd < 0) {
      fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
      if (fd < 0 && errno == ENOENT) {
        if (!create)
          return mapping{};
        continue;
      }
      if (fd < 0)
        return system_error("sim card " + uuid + ": cannot open /dev/shm" + name);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || (created && ::ftruncate(fd, sizeof(sim_card_segment)) != 0)) {
      auto err = system_error("sim card " + uuid + ": cannot size /dev/shm" + name);
      ::close(fd);
      if (created)
        ::shm_unlink(name.c_str());
      return err;
    }
    auto mapped = created ? std::variant<sim_card_segment*, std::string>{static_cast<sim_card_segment*>(
                              ::mmap(nullptr, sizeof(sim_card_segment), PROT_READ | PROT_WRITE,
                                     MAP_SHARED, fd, 0))}
                          : map_segment(fd, name);
    ::close(fd);
    if (auto* err = std::get_if<std::string>(&mapped))
      return "sim card " + uuid + ": " + *err;
    auto* segment = std::get<sim_card_segment*>(mapped);
    if (segment == MAP_FAILED)
      return system_error("sim card " + uuid + ": cannot map /dev/shm" + name);
    if (created) {
      set_up(*segment, total_bytes);  // ftruncate zeroed the slots
    } else if (total_bytes > 0) {
      // A holder from outside (sim-hold) may have created it without knowing the card's total.
      segment_lock lock{*segment};
      if (segment->total == 0)
        segment->total = total_bytes;
    }
    return mapping{segment, static_cast<std::uint64_t>(st.st_ino)};
  }
  return "sim card " + uuid + ": /dev/shm" + name + " kept disappearing while it was opened";
}

bool sim_card_memory::remove(const std::string& uuid) {
  return ::shm_unlink(segment_name(uuid).c_str()) == 0;
}

sim_card_memory::sim_card_memory(std::string uuid, std::int64_t total, mapping m)
  : uuid_(std::move(uuid)), total_(total) {
  mappings_.push_back(std::make_unique<mapping>(m));
  current_.store(mappings_.back().get());
}

sim_card_memory::~sim_card_memory() {
  for (const auto& m : mappings_)
    ::munmap(m->segment, sizeof(sim_card_segment));
}

bool sim_card_memory::still_named(const mapping& m) const {
  int fd = ::shm_open(segment_name(uuid_).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0)
    return false;
  struct stat st {};
  bool same = ::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_ino) == m.inode;
  ::close(fd);
  return same;
}

void sim_card_memory::remap(const mapping* stale) {
  std::lock_guard lock{remap_mutex_};
  if (current_.load() != stale)
    return;  // another thread did
  auto opened = map_card(uuid_, total_, true);
  if (auto* m = std::get_if<mapping>(&opened)) {
    mappings_.push_back(std::make_unique<mapping>(*m));
    current_.store(mappings_.back().get());
  }
}

bool sim_card_memory::charge(std::int64_t n) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto* m = current_.load();
    auto& s = *m->segment;
    {
      segment_lock lock{s};
      auto* slot = own_slot(s, false);
      if (slot == nullptr) {
        slot = own_slot(s, true);
        if (slot == nullptr)
          return false;
        // The segment's last holder may have removed it since this process mapped it: a first
        // charge counts only in the segment the card's name leads to now.
        if (!still_named(*m)) {
          *slot = {0, 0, 0};
          slot = nullptr;
        }
      }
      if (slot != nullptr) {
        if (total_ > 0 && used_bytes(s) + n > total_ && !(reclaim_dead(s) && used_bytes(s) + n <= total_))
          return false;
        slot->bytes += n;
        return true;
      }
    }
    remap(m);
  }
  return false;
}

void sim_card_memory::credit(std::int64_t n) {
  // Called from the allocator's deleter, which must not throw: a lock that cannot be had (never
  // seen; a robust mutex is recovered) leaves the bytes to be reclaimed when this process ends.
  try {
    auto& s = *current_.load()->segment;
    segment_lock lock{s};
    if (auto* slot = own_slot(s, false))
      slot->bytes = std::max<std::int64_t>(0, slot->bytes - n);  // none below what it charged here
  } catch (const std::exception&) {
  }
}

std::int64_t sim_card_memory::used() {
  auto& s = *current_.load()->segment;
  segment_lock lock{s};
  reclaim_dead(s);
  return used_bytes(s);
}

std::int64_t sim_card_memory::free_bytes() {
  return total_ > 0 ? std::max<std::int64_t>(0, total_ - used()) : 0;
}

std::int64_t sim_card_memory::held_here() {
  auto& s = *current_.load()->segment;
  segment_lock lock{s};
  auto* slot = own_slot(s, false);
  return slot == nullptr ? 0 : slot->bytes;
}

bool sim_card_memory::remove_if_last() {
  auto* m = current_.load();
  auto& s = *m->segment;
  segment_lock lock{s};
  reclaim_dead(s);
  auto pid = own_identity().pid;
  for (const auto& slot : s.slots)
    if (slot.pid != 0 && slot.pid != pid)
      return false;
  // Under the lock, a process that claims its first slot afterwards finds the name gone and
  // creates the card's segment anew.
  if (!still_named(*m) || ::shm_unlink(segment_name(uuid_).c_str()) != 0)
    return false;
  if (auto* slot = own_slot(s, false))
    *slot = {0, 0, 0};  // a charge after this one maps the card's segment anew
  return true;
}

} // namespace cdui::devices
