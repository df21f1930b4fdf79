#include "devices/sim_card_registry.hpp"

#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <utility>

namespace cdui::devices {

namespace {

/// This process's cards and the segments its runs charge (one mapping per card).
struct registry {
  std::mutex mutex;
  std::map<std::string, sim_card> by_device;                       // "sim:1" -> its card
  std::map<std::string, std::shared_ptr<sim_card_memory>> charged;  // by UUID
  std::set<std::string> own;                                        // UUIDs of own cards

  bool released = false;

  /// At exit: nobody can name this process's own cards any more; another card's segment goes
  /// when no other live process holds memory on it. Mappings stay valid (tensors freed after this
  /// still credit them). Once.
  void release() {
    std::lock_guard lock{mutex};
    if (std::exchange(released, true))
      return;
    for (const auto& uuid : own)
      sim_card_memory::remove(uuid);
    for (const auto& [uuid, card] : charged)
      if (!own.count(uuid))
        card->remove_if_last();
  }

  ~registry() { release(); }
};

registry& the_registry() {
  static registry r;
  return r;
}

/// "<pid>-<index>" after the own-card prefix: the pid, or 0 when it is not that shape.
int owner_pid(std::string_view rest) {
  auto dash = rest.find('-');
  int pid = 0;
  auto index = rest.substr(dash == std::string_view::npos ? rest.size() : dash + 1);
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + std::min(dash, rest.size()), pid);
  if (ec != std::errc{} || end != rest.data() + std::min(dash, rest.size()) || index.empty()
      || index.find_first_not_of("0123456789") != std::string_view::npos)
    return 0;
  return pid;
}

/// Deletes the segments of own cards of processes on this host that ended without deleting them
/// (a crash, SIGKILL): no process can name those cards again.
void remove_dead_owners_segments() {
  auto cards = own_sim_card_prefix();
  auto segments = sim_card_memory::segment_name(cards).substr(1);  // "cdui-sim-SIM-<host>-"
  auto uuid_at = segments.size() - cards.size();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    auto name = entry.path().filename().string();
    if (name.rfind(segments, 0) != 0)
      continue;
    auto pid = owner_pid(std::string_view{name}.substr(segments.size()));
    if (pid > 0 && pid != ::getpid() && !process_alive(pid))
      sim_card_memory::remove(name.substr(uuid_at));
  }
}


} // namespace

void use_sim_cards(const std::vector<sim_card>& cards) {
  auto& r = the_registry();
  std::lock_guard lock{r.mutex};
  r.by_device.clear();
  bool any_own = false;
  for (const auto& card : cards) {
    r.by_device["sim:" + std::to_string(card.index)] = card;
    if (card.own)
      any_own = r.own.insert(card.uuid).second || any_own;
  }
  if (any_own)
    remove_dead_owners_segments();
}

void release_sim_cards() {
  the_registry().release();
}

std::shared_ptr<sim_card_memory> sim_card_for(const std::string& device, std::int64_t total_bytes) {
  auto& r = the_registry();
  std::lock_guard lock{r.mutex};
  auto i = r.by_device.find(device);
  if (i == r.by_device.end() || i->second.total_bytes != total_bytes)
    return nullptr;
  const auto& uuid = i->second.uuid;
  if (auto known = r.charged.find(uuid); known != r.charged.end())
    return known->second;
  auto opened = sim_card_memory::open(uuid, total_bytes);
  auto* card = std::get_if<std::shared_ptr<sim_card_memory>>(&opened);
  if (card == nullptr)
    return nullptr;  // no segment to be had (another user's, say): the scope counts on its own
  return r.charged[uuid] = *card;
}

std::int64_t sim_card_free_bytes(const std::string& uuid, std::int64_t total_bytes) {
  // Opened for each look, not kept: the segment a look finds may be a new one since the last.
  auto opened = sim_card_memory::open(uuid, total_bytes, false);
  auto* card = std::get_if<std::shared_ptr<sim_card_memory>>(&opened);
  if (card == nullptr || *card == nullptr)
    return total_bytes;
  return std::max<std::int64_t>(0, total_bytes - (*card)->used());
}

} // namespace cdui::devices
