// Worker credentials: random, stored as a hash only, compared in constant time, written 0600; the
// DDP rendezvous' values signed with the run's secret.
#include <boost/test/unit_test.hpp>

#include <set>

#include <sys/stat.h>

#include "storage/credentials.hpp"
#include "storage/run_store.hpp"
#include "testkit/home.hpp"

using namespace cdui::storage;

BOOST_AUTO_TEST_SUITE(credentials_test)

BOOST_AUTO_TEST_CASE(credentials_are_random_and_their_hash_is_sha256) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto c = new_credential();
    BOOST_TEST(c.size() == 8u + 64u);
    BOOST_TEST(c.rfind("cdui-wk-", 0) == 0u);
    BOOST_TEST(seen.insert(c).second);
  }
  // FIPS 180-2's test vector.
  BOOST_TEST(credential_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(same_secret("secret", "secret"));
  BOOST_TEST(!same_secret("secret", "secreT"));
  BOOST_TEST(!same_secret("secret", "secret-longer"));
  BOOST_TEST(!same_secret("", "x"));
}

BOOST_AUTO_TEST_CASE(a_private_file_is_0600_and_replaced_whole) {
  cdui::test::temp_home home;
  auto file = home.path() / "secret.txt";
  write_private_file(file, "first\n");
  write_private_file(file, "second\nline\n");
  struct stat st {};
  BOOST_REQUIRE(::stat(file.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  BOOST_TEST(read_first_line(file).value() == "second");
  BOOST_TEST(!read_first_line(home.path() / "missing").has_value());
  BOOST_CHECK_THROW(write_private_file(home.path() / "no-such-dir" / "f", "x"), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(enrolled_workers_survive_the_store_and_a_rekey_replaces_the_hash) {
  cdui::test::temp_home home;
  auto credential = new_credential();
  {
    run_store store{home.path() / "cdui.db"};
    store.put_worker({"gpu-box", credential_hash(credential), 100, 0});
    store.put_worker({"lab-2", credential_hash("other"), 200, 0});
    store.put_worker({"gpu-box", credential_hash("re-keyed"), 999, 300});  // re-key: enrolled_ms stays
  }
  run_store store{home.path() / "cdui.db"};
  auto workers = store.enrolled_workers();
  BOOST_REQUIRE(workers.size() == 2u);
  BOOST_TEST(workers[0].name == "gpu-box");
  BOOST_TEST(workers[0].credential_hash == credential_hash("re-keyed"));
  BOOST_TEST(workers[0].enrolled_ms == 100);
  BOOST_TEST(workers[0].rekeyed_ms == 300);
  BOOST_TEST(store.remove_worker("lab-2"));
  BOOST_TEST(!store.remove_worker("lab-2"));
  BOOST_TEST(store.enrolled_workers().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_signed_value_verifies_under_its_key_and_secret_alone) {
  auto stored = signed_value("run secret", "cdui-run-ab/0/rank_0", "10.0.0.2:4711");
  BOOST_TEST(stored.size() == 32u + 13u);
  BOOST_TEST(verified_value("run secret", "cdui-run-ab/0/rank_0", stored).value() == "10.0.0.2:4711");
  BOOST_TEST(!verified_value("run secret", "cdui-run-ab/0/rank_1", stored).has_value());
  BOOST_TEST(!verified_value("other secret", "cdui-run-ab/0/rank_0", stored).has_value());
  BOOST_TEST(!verified_value("run secret", "cdui-run-ab/0/rank_0", "10.0.0.2:4711").has_value());
  for (std::size_t i = 0; i < stored.size(); ++i) {
    auto flipped = stored;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x01);
    BOOST_TEST(!verified_value("run secret", "cdui-run-ab/0/rank_0", flipped).has_value(), "byte " << i);
  }
  BOOST_TEST(!verified_value("run secret", "k", stored.substr(0, 31)).has_value());
  BOOST_TEST(!verified_value("run secret", "k", "").has_value());
}

BOOST_AUTO_TEST_CASE(a_signed_value_binds_where_the_key_ends_and_holds_any_bytes) {
  // Without the key's length in the MAC, ("ab", "c") and ("a", "bc") would share a tag.
  auto ab_c = signed_value("s", "ab", "c");
  BOOST_TEST(!verified_value("s", "a", ab_c.substr(0, 32) + "bc").has_value());
  using namespace std::string_literals;
  auto key = "k\0ey\xff"s;
  auto value = "\0\0va\0lue\x80"s;
  BOOST_TEST(verified_value("s", key, signed_value("s", key, value)).value() == value);
  BOOST_TEST(!verified_value("s", "k"s, signed_value("s", key, value)).has_value());
  BOOST_TEST(verified_value("s", "", signed_value("s", "", "")).value().empty());
  // Secrets longer than HMAC's 64-byte block, differing in their last byte, differ.
  std::string long_secret(100, 'x');
  BOOST_TEST(verified_value(long_secret, "k", signed_value(long_secret, "k", "v")).value() == "v");
  BOOST_TEST(!verified_value(long_secret + "y", "k", signed_value(long_secret + "z", "k", "v")).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
