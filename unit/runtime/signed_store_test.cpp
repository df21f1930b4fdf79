// The DDP rendezvous' signed store (torch_compat/signed_store.hpp, docs/ddp.md "Across workers";
// issue 34) over a real c10d TCPStore on 127.0.0.1: ranks with the run's secret read what each other
// wrote; a value written by a plain client without the secret, or signed with another secret, is
// refused by name. A client of a store that is not there gives up after its connect timeout.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "storage/credentials.hpp"
#include "torch_compat/c10d.hpp"
#include "torch_compat/signed_store.hpp"

using namespace cdui::torch_compat;
using namespace std::string_literals;

namespace {

using bytes = std::vector<std::uint8_t>;

bytes of(const std::string& text) {
  return {text.begin(), text.end()};
}

/// A TCPStore hosted on 127.0.0.1 at a free port, and its plain clients.
struct rendezvous {
  static constexpr std::chrono::milliseconds timeout{10000};
  tcp_store host = make_tcp_store("127.0.0.1", 0, true, 1, timeout);

  [[nodiscard]] c10::intrusive_ptr<c10d::Store> client() const {
    return make_tcp_store("127.0.0.1", host.port, false, 1, timeout).store;
  }
  /// A client as a rank of run `secret` sees it in runtime/nodes/ddp.cpp: signed, under a prefix.
  [[nodiscard]] c10::intrusive_ptr<c10d::Store> rank(const std::string& secret) const {
    return c10::make_intrusive<c10d::PrefixStore>("cdui-run-ab/0", signed_store(client(), secret, {cdui::storage::signed_value, cdui::storage::verified_value}));
  }
};

/// Writes `value` at `key` through the plain client `intruder`, over the value a rank wrote there,
/// and returns once the store holds it: c10d's set does not wait for the store, and each client
/// has a connection of its own, so only a get on the same connection orders the two.
void overwrite(const c10::intrusive_ptr<c10d::Store>& intruder, const std::string& key, const bytes& value) {
  (void)intruder->get(key);
  intruder->set(key, value);
  BOOST_TEST_REQUIRE((intruder->get(key) == value));
}

/// Runs `read` and checks that it throws std::runtime_error naming `key` and "not signed".
template <typename Read>
void check_refused(Read read, const std::string& key) {
  try {
    read();
    BOOST_ERROR("a value not signed with the run's secret was taken at " << key);
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("'" + key + "'") != std::string::npos, what);
    BOOST_TEST(what.find("not signed with the run's secret") != std::string::npos, what);
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(signed_store_test)

BOOST_AUTO_TEST_CASE(a_rank_with_the_secret_reads_what_another_wrote_and_the_store_holds_it_signed) {
  rendezvous store;
  auto writer = store.rank("run secret");
  auto reader = store.rank("run secret");
  auto address = "10.0.0.2:4711\0\xff"s;
  writer->set("rank_0", of(address));
  BOOST_TEST(reader->get("rank_0") == of(address));
  auto stored = store.client()->get("cdui-run-ab/0/rank_0");
  BOOST_TEST(stored.size() == 32 + address.size());
  BOOST_TEST(stored != of(address));
}

BOOST_AUTO_TEST_CASE(a_value_written_without_the_secret_is_refused_naming_its_key) {
  rendezvous store;
  auto writer = store.rank("run secret");
  auto reader = store.rank("run secret");
  auto intruder = store.client();
  const std::string key = "cdui-run-ab/0/rank_0";
  writer->set("rank_0", of("10.0.0.2:4711"));
  writer->set("rank_1", of("10.0.0.3:4711"));
  overwrite(intruder, key, of("10.6.6.6:4711"));
  check_refused([&] { (void)reader->get("rank_0"); }, key);
  // rank_1's signed value, copied: the MAC covers the key.
  overwrite(intruder, key, intruder->get("cdui-run-ab/0/rank_1"));
  check_refused([&] { (void)reader->get("rank_0"); }, key);
  // Values shorter than a MAC, none at all, or of any bytes: refused, never a crash.
  for (const auto& hostile : {""s, "x"s, std::string(31, '\0'), std::string(4096, '\xff')}) {
    overwrite(intruder, key, of(hostile));
    check_refused([&] { (void)reader->get("rank_0"); }, key);
  }
}

BOOST_AUTO_TEST_CASE(a_rank_with_another_secret_refuses_what_the_run_signed) {
  rendezvous store;
  store.rank("run secret")->set("rank_0", of("10.0.0.2:4711"));
  check_refused([&] { (void)store.rank("another secret")->get("rank_0"); }, "cdui-run-ab/0/rank_0");
  BOOST_TEST(store.rank("run secret")->get("rank_0") == of("10.0.0.2:4711"));
}

BOOST_AUTO_TEST_CASE(compare_set_signs_what_it_compares_and_writes_and_verifies_what_it_returns) {
  rendezvous store;
  auto rank = store.rank("run secret");
  BOOST_TEST(rank->compareSet("state", {}, of("first")) == of("first"));
  BOOST_TEST(rank->compareSet("state", of("first"), of("second")) == of("second"));
  BOOST_TEST(rank->compareSet("state", of("not it"), of("third")) == of("second"));
  BOOST_TEST(store.rank("run secret")->get("state") == of("second"));
  BOOST_TEST(store.client()->get("cdui-run-ab/0/state").size() == 32u + 6u);
  overwrite(store.client(), "cdui-run-ab/0/state", of("forged"));
  check_refused([&] { (void)rank->compareSet("state", of("second"), of("third")); }, "cdui-run-ab/0/state");
  check_refused([&] { (void)rank->compareSet("state", of("forged"), of("third")); }, "cdui-run-ab/0/state");
}

BOOST_AUTO_TEST_CASE(a_client_of_a_store_nobody_hosts_gives_up_after_its_connect_timeout) {
  // A port nothing listens at (the store's host went, or the address is wrong): the rank says so
  // after its connect timeout, not after the collective timeout (30 min by default).
  int port = 0;
  {
    auto gone = make_tcp_store("127.0.0.1", 0, true, 1, rendezvous::timeout);
    port = gone.port;
  }
  auto start = std::chrono::steady_clock::now();
  BOOST_CHECK_THROW((void)make_tcp_store("127.0.0.1", port, false, 1, std::chrono::minutes(10), std::chrono::seconds(1)),
                    std::exception);
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::minutes(1)), "it waited past a minute");
  // One that connects waits the collective timeout in its operations.
  rendezvous r;
  auto client = make_tcp_store("127.0.0.1", r.host.port, false, 1, std::chrono::minutes(10), std::chrono::seconds(1));
  BOOST_TEST(client.store->getTimeout().count() == std::chrono::milliseconds(std::chrono::minutes(10)).count());
}

BOOST_AUTO_TEST_SUITE_END()
