// A sim card's memory shared across processes: real forked processes charge one segment.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <ATen/ATen.h>

#include "devices/host_inventory.hpp"
#include "devices/memory.hpp"
#include "devices/sim_card_memory.hpp"
#include "devices/sim_card_registry.hpp"
#include "devices/sim_devices.hpp"
#include "testkit/wait.hpp"

using namespace cdui::devices;

namespace {

/// A card UUID no other test (or test run) uses; its segment is removed at the end.
struct unique_card {
  std::string uuid;
  unique_card() {
    static int next = 0;
    uuid = "SIM-test-" + std::to_string(::getpid()) + "-" + std::to_string(next++);
  }
  ~unique_card() { sim_card_memory::remove(uuid); }
  [[nodiscard]] bool segment_exists() const {
    return std::filesystem::exists("/dev/shm" + sim_card_memory::segment_name(uuid));
  }
};

/// Another process that charges `bytes` to a card and holds them until it is told to give them
/// back (release()) or killed.
class holder {
public:
  /// `remove`: at release(), it also removes the card's segment if it is the last holder.
  holder(const std::string& uuid, std::int64_t total, std::int64_t bytes, bool remove = false) {
    int up[2], down[2];
    BOOST_REQUIRE(::pipe(up) == 0 && ::pipe(down) == 0);
    pid_ = ::fork();
    BOOST_REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(up[0]);
      ::close(down[1]);
      auto opened = sim_card_memory::open(uuid, total);
      auto* card = std::get_if<std::shared_ptr<sim_card_memory>>(&opened);
      char ok = card != nullptr && (*card)->charge(bytes) ? '1' : '0';
      (void)!::write(up[1], &ok, 1);
      char go = 0;
      (void)!::read(down[0], &go, 1);  // until release() or the parent's end
      if (ok == '1')
        (*card)->credit(bytes);
      if (ok == '1' && remove)
        (*card)->remove_if_last();
      ::_exit(0);
    }
    ::close(up[1]);
    ::close(down[0]);
    release_fd_ = down[1];
    char ok = 0;
    charged_ = ::read(up[0], &ok, 1) == 1 && ok == '1';  // blocks until the child has charged
    ::close(up[0]);
  }
  ~holder() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(release_fd_);
  }
  [[nodiscard]] bool charged() const { return charged_; }
  /// Tells it to give its bytes back and waits for it to exit.
  void release() {
    char go = 1;
    (void)!::write(release_fd_, &go, 1);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  /// SIGKILL: it ends holding its bytes. Left a zombie (not waited for) once the signal lands.
  void kill() { ::kill(pid_, SIGKILL); }
  [[nodiscard]] pid_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
  int release_fd_ = -1;
  bool charged_ = false;
};

std::shared_ptr<sim_card_memory> open_card(const std::string& uuid, std::int64_t total) {
  auto opened = sim_card_memory::open(uuid, total);
  if (auto* err = std::get_if<std::string>(&opened))
    BOOST_FAIL(*err);
  return std::get<std::shared_ptr<sim_card_memory>>(opened);
}

} // namespace

BOOST_AUTO_TEST_SUITE(sim_card_memory_test)

BOOST_AUTO_TEST_CASE(two_processes_see_each_others_charges) {
  unique_card name;
  auto card = open_card(name.uuid, 1 << 20);
  BOOST_TEST(card->used() == 0);
  BOOST_TEST(card->free_bytes() == 1 << 20);
  holder other{name.uuid, 1 << 20, 300'000};
  BOOST_REQUIRE(other.charged());
  BOOST_TEST(card->used() == 300'000);
  BOOST_TEST(card->free_bytes() == (1 << 20) - 300'000);
  BOOST_TEST(card->charge(1000));
  BOOST_TEST(card->held_here() == 1000);
  BOOST_TEST(card->used() == 301'000);
  other.release();
  BOOST_TEST(card->used() == 1000);
  card->credit(1000);
  BOOST_TEST(card->used() == 0);
  // The segment is private to this user.
  struct stat st {};
  BOOST_TEST(::stat(("/dev/shm" + sim_card_memory::segment_name(name.uuid)).c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600);
}

BOOST_AUTO_TEST_CASE(the_total_is_enforced_across_processes) {
  unique_card name;
  holder other{name.uuid, 10 * 1024, 8 * 1024};
  BOOST_REQUIRE(other.charged());
  auto card = open_card(name.uuid, 10 * 1024);
  BOOST_TEST(!card->charge(4 * 1024));  // 8 + 4 > 10, though this process holds nothing
  BOOST_TEST(card->held_here() == 0);
  BOOST_TEST(card->charge(2 * 1024));
  holder third{name.uuid, 10 * 1024, 1};
  BOOST_TEST(!third.charged());  // the card is full for every process
  // A holder from outside that gives no total uses the creator's.
  auto outside = open_card(name.uuid, 0);
  BOOST_TEST(outside->total() == 10 * 1024);
  BOOST_TEST(!outside->charge(1));
}

BOOST_AUTO_TEST_CASE(a_holder_from_outside_learns_the_total_from_the_first_process_that_knows_it) {
  unique_card name;
  holder outside{name.uuid, 0, 6 * 1024};  // creates the segment without a total
  BOOST_REQUIRE(outside.charged());
  auto card = open_card(name.uuid, 8 * 1024);  // the card's own process, with its size
  BOOST_TEST(card->free_bytes() == 2 * 1024);
  holder another{name.uuid, 0, 4 * 1024};
  BOOST_TEST(!another.charged());  // 6 + 4 > 8, though it was given no total
}

BOOST_AUTO_TEST_CASE(a_dead_holders_bytes_are_reclaimed_at_the_next_look) {
  unique_card name;
  auto card = open_card(name.uuid, 1 << 20);
  holder crashed{name.uuid, 1 << 20, 1 << 19};
  BOOST_REQUIRE(crashed.charged());
  BOOST_TEST(card->used() == 1 << 19);
  crashed.kill();
  // Killed holding its bytes: a zombie until waited for, and already not counted.
  BOOST_TEST(cdui::test::eventually([&] { return card->used() == 0; }));
  BOOST_TEST(card->charge(1 << 20));  // the whole card again
  card->credit(1 << 20);
}

BOOST_AUTO_TEST_CASE(a_full_card_takes_back_a_dead_holders_bytes_before_it_refuses) {
  unique_card name;
  holder crashed{name.uuid, 4096, 4096};
  BOOST_REQUIRE(crashed.charged());
  auto card = open_card(name.uuid, 4096);
  BOOST_TEST(!card->charge(1));
  crashed.kill();
  BOOST_REQUIRE(cdui::test::eventually([&] { return !process_alive(crashed.pid()); }));
  BOOST_TEST(card->charge(4096));  // no used() in between: the charge reclaims
  card->credit(4096);
}

BOOST_AUTO_TEST_CASE(the_last_holder_removes_a_cards_segment_and_a_later_charge_makes_it_anew) {
  unique_card name;
  auto card = open_card(name.uuid, 1 << 20);  // mapped, nothing charged yet
  {
    holder first{name.uuid, 1 << 20, 1000, true};
    BOOST_REQUIRE(first.charged());
    BOOST_TEST(!card->remove_if_last());  // another live process holds memory on it
    first.release();                       // it was the last holder: the segment goes
  }
  BOOST_TEST(!name.segment_exists());
  // This process mapped the old segment before it went: its first charge lands in a new one,
  // the one every other process finds by the card's name.
  BOOST_TEST(card->charge(4000));
  BOOST_TEST(name.segment_exists());
  holder second{name.uuid, 1 << 20, (1 << 20) - 4000};
  BOOST_TEST(second.charged());
  BOOST_TEST(card->used() == 1 << 20);
  BOOST_TEST(!card->charge(1));
  second.release();
  card->credit(4000);
  BOOST_TEST(card->remove_if_last());
  BOOST_TEST(!name.segment_exists());
}

BOOST_AUTO_TEST_CASE(odd_card_names_make_safe_distinct_segment_names) {
  BOOST_TEST(sim_card_memory::segment_name("SIM-box-A-0") == "/cdui-sim-SIM-box-A-0");
  auto slash = sim_card_memory::segment_name("SIM-../../etc/passwd");
  BOOST_TEST(slash.find('/', 1) == std::string::npos, slash);
  BOOST_TEST(slash != sim_card_memory::segment_name("SIM-.._.._etc_passwd"));
  auto longest = sim_card_memory::segment_name(std::string(1000, 'a'));
  BOOST_TEST(longest.size() < 255u, longest.size());
  BOOST_TEST(longest != sim_card_memory::segment_name(std::string(999, 'a')));
  BOOST_TEST(std::holds_alternative<std::string>(sim_card_memory::open("", 1)));
  // A missing segment is not created by a look.
  unique_card absent;
  auto looked = sim_card_memory::open(absent.uuid, 1, false);
  BOOST_REQUIRE(std::holds_alternative<std::shared_ptr<sim_card_memory>>(looked));
  BOOST_TEST(std::get<std::shared_ptr<sim_card_memory>>(looked) == nullptr);
  BOOST_TEST(!absent.segment_exists());
  BOOST_TEST(sim_card_free_bytes(absent.uuid, 4096) == 4096);
  BOOST_TEST(!absent.segment_exists());
}

BOOST_AUTO_TEST_CASE(a_segment_others_can_read_or_of_another_shape_is_refused) {
  unique_card open_to_all;
  auto name = sim_card_memory::segment_name(open_to_all.uuid);
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  BOOST_REQUIRE(fd >= 0);
  ::fchmod(fd, 0644);
  BOOST_REQUIRE(::ftruncate(fd, 4096) == 0);
  ::close(fd);
  auto err = std::get<std::string>(sim_card_memory::open(open_to_all.uuid, 1));
  BOOST_TEST(err.find("can be read by others") != std::string::npos, err);

  unique_card empty;
  fd = ::shm_open(sim_card_memory::segment_name(empty.uuid).c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  BOOST_REQUIRE(fd >= 0);
  ::close(fd);  // size 0: not set up, and never will be
  err = std::get<std::string>(sim_card_memory::open(empty.uuid, 1));
  BOOST_TEST(err.find("not a cdui sim card segment") != std::string::npos, err);
}

BOOST_AUTO_TEST_CASE(a_run_scope_on_a_named_card_fails_when_another_process_holds_the_card) {
  install_counting_allocator();
  auto card_name = "t" + std::to_string(::getpid()) + "-scope";
  unique_card name;
  name.uuid = "SIM-" + card_name + "-0";
  auto inv = host_inventory::probe("64KiB@" + card_name);
  auto scope = std::make_shared<memory_scope>("sim:0", 64 * 1024);
  BOOST_REQUIRE(scope->card() != nullptr);
  BOOST_TEST(scope->card()->uuid() == name.uuid);
  holder other{name.uuid, 64 * 1024, 48 * 1024};
  BOOST_REQUIRE(other.charged());
  BOOST_TEST(sim_card_free_bytes(name.uuid, 64 * 1024) == 16 * 1024);
  memory_scope_guard guard{scope};
  auto a = at::empty({2048}, at::kFloat);  // 8 KiB of the 16 free
  BOOST_TEST(scope->card()->held_here() == 8 * 1024);
  try {
    auto b = at::empty({4096}, at::kFloat);  // 16 KiB: under the run's cap, over the card's free
    BOOST_FAIL("the allocation should have failed");
  } catch (const c10::OutOfMemoryError& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("sim:0 out of memory") != std::string::npos, what);
    BOOST_TEST(what.find("other processes") != std::string::npos, what);
  }
  BOOST_TEST(scope->card_was_full());
  BOOST_TEST(scope->stats().live == 8 * 1024);
  other.release();
  auto b = at::empty({4096}, at::kFloat);  // the other process gave its bytes back
  BOOST_TEST(scope->card()->held_here() == 24 * 1024);
  // A scope on a card of another size (one `cdui fit` imagines) keeps its count to itself.
  BOOST_TEST(std::make_shared<memory_scope>("sim:0", 32 * 1024)->card() == nullptr);
}

BOOST_AUTO_TEST_CASE(own_cards_of_processes_that_died_leave_no_segment_behind) {
  // A process that offered an own card and died without removing its segment.
  pid_t dead = ::fork();
  if (dead == 0)
    ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  unique_card left;
  left.uuid = own_sim_card_prefix() + std::to_string(dead) + "-0";
  auto card = open_card(left.uuid, 4096);
  BOOST_TEST(card->charge(10));
  BOOST_REQUIRE(left.segment_exists());
  auto inv = host_inventory::probe("1GiB");  // an own card: this process cleans up after the dead
  BOOST_TEST(!left.segment_exists());
  // This process's own card is not touched.
  auto mine = own_sim_card_prefix() + std::to_string(::getpid()) + "-0";
  BOOST_TEST(inv.devices()[1].uuid == mine);
  auto scope = std::make_shared<memory_scope>("sim:0", 1LL << 30);
  BOOST_REQUIRE(scope->card() != nullptr);
  BOOST_TEST(std::filesystem::exists("/dev/shm" + sim_card_memory::segment_name(mine)));
}

BOOST_AUTO_TEST_SUITE_END()
