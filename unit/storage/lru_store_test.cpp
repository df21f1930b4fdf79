#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "storage/lru_store.hpp"

using cdui::storage::lru_store;
using strings = std::vector<std::string>;

namespace {

// Sets an environment variable for one test and removes it afterwards.
class env_guard {
public:
  env_guard(const char* name, const char* value) : name_{name} { ::setenv(name, value, 1); }
  ~env_guard() { ::unsetenv(name_); }
  env_guard(const env_guard&) = delete;
  env_guard& operator=(const env_guard&) = delete;

private:
  const char* name_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(lru_store_test)

BOOST_AUTO_TEST_CASE(the_byte_budget_evicts_the_least_recently_used_and_get_refreshes) {
  lru_store<int> store{100, 10};
  BOOST_TEST(store.put("a", 1, 40).evicted.empty());
  BOOST_TEST(store.put("b", 2, 40).evicted.empty());
  BOOST_TEST(store.put("c", 3, 20).evicted.empty());
  BOOST_TEST(store.bytes() == 100);  // reaching the budget exactly is allowed
  // "a" is the oldest, but reading it makes "b" the least recently used.
  BOOST_REQUIRE(store.get("a") != nullptr);
  BOOST_TEST(*store.get("a") == 1);
  auto r = store.put("d", 4, 30);
  BOOST_TEST(r.stored);
  BOOST_TEST(r.evicted == strings{"b"}, boost::test_tools::per_element());
  BOOST_TEST(store.get("b") == nullptr);
  BOOST_TEST(store.bytes() == 90);
  BOOST_TEST(store.size() == 3u);
  // Several evictions in one put come least recently used first.
  r = store.put("e", 5, 90);
  BOOST_TEST(r.evicted == (strings{"c", "a", "d"}), boost::test_tools::per_element());
  BOOST_TEST(store.size() == 1u);
  BOOST_TEST(store.bytes() == 90);
}

BOOST_AUTO_TEST_CASE(the_count_limit_evicts_the_least_recently_used) {
  lru_store<std::string> store{1'000'000, 2};
  BOOST_TEST(store.max_entries() == 2u);
  (void)store.put("a", "x", 1);
  (void)store.put("b", "y", 1);
  (void)store.get("a");
  auto r = store.put("c", "z", 1);
  BOOST_TEST(r.evicted == strings{"b"}, boost::test_tools::per_element());
  BOOST_TEST(store.size() == 2u);
  BOOST_TEST(store.bytes() == 2);
  BOOST_REQUIRE(store.get("a") != nullptr);
  BOOST_TEST(*store.get("a") == "x");
}

BOOST_AUTO_TEST_CASE(a_byte_budget_of_zero_leaves_the_count_limit_in_charge) {
  lru_store<int> store{0, 3};
  const std::int64_t huge = std::int64_t{1} << 40;
  BOOST_TEST(store.put("a", 1, huge).stored);
  BOOST_TEST(store.put("b", 2, huge).stored);
  BOOST_TEST(store.put("c", 3, huge).evicted.empty());
  BOOST_TEST(store.bytes() == 3 * huge);
  auto r = store.put("d", 4, 1);
  BOOST_TEST(r.evicted == strings{"a"}, boost::test_tools::per_element());
  BOOST_TEST(store.size() == 3u);
}

BOOST_AUTO_TEST_CASE(an_entry_larger_than_the_budget_is_refused_and_evicts_nothing) {
  lru_store<int> store{100, 10};
  (void)store.put("a", 1, 60);
  auto r = store.put("big", 2, 101);
  BOOST_TEST(!r.stored);
  BOOST_TEST(r.evicted.empty());
  BOOST_TEST(store.get("big") == nullptr);
  BOOST_TEST(store.get("a") != nullptr);
  BOOST_TEST(store.bytes() == 60);
  // Refusing a new value for a key drops the old one too: it would be stale.
  r = store.put("a", 3, 500);
  BOOST_TEST(!r.stored);
  BOOST_TEST(store.get("a") == nullptr);
  BOOST_TEST(store.bytes() == 0);
  BOOST_TEST(store.size() == 0u);
}

BOOST_AUTO_TEST_CASE(replacing_a_key_adjusts_the_bytes_and_does_not_evict_itself) {
  lru_store<int> store{100, 2};
  (void)store.put("a", 1, 30);
  (void)store.put("b", 2, 30);
  auto r = store.put("a", 10, 50);
  BOOST_TEST(r.stored);
  BOOST_TEST(r.evicted.empty());  // replacing does not count as a third entry
  BOOST_TEST(store.size() == 2u);
  BOOST_TEST(store.bytes() == 80);
  BOOST_TEST(*store.get("a") == 10);
  // Growing "a" past what "b" leaves free evicts "b", not "a".
  r = store.put("a", 11, 90);
  BOOST_TEST(r.evicted == strings{"b"}, boost::test_tools::per_element());
  BOOST_TEST(store.bytes() == 90);
  BOOST_TEST(store.erase("a"));
  BOOST_TEST(!store.erase("a"));
  BOOST_TEST(store.bytes() == 0);
}

BOOST_AUTO_TEST_CASE(the_seed_defaults) {
  using namespace cdui::storage;
  BOOST_TEST(execution_cache_budget.max_bytes == 1073741824);
  BOOST_TEST(execution_cache_budget.max_entries == 256u);
  BOOST_TEST(run_output_store_budget.max_bytes == 2147483648);
  BOOST_TEST(run_output_store_budget.max_entries == 20u);
  BOOST_TEST(node_state_store_budget.max_bytes == 1073741824);
  BOOST_TEST(node_state_store_budget.max_entries == 200u);
  lru_store<int> store{run_output_store_budget};
  BOOST_TEST(store.max_bytes() == 2147483648);
  BOOST_TEST(store.max_entries() == 20u);
}

BOOST_AUTO_TEST_CASE(the_env_var_sets_the_byte_budget_in_mb) {
  using namespace cdui::storage;
  ::unsetenv("CODEFYUI_EXECUTION_CACHE_MAX_MB");
  auto unset = read_budget(execution_cache_budget);
  BOOST_TEST(unset.budget.max_bytes == 1073741824);
  BOOST_TEST(unset.warning.empty());
  {
    env_guard env{"CODEFYUI_EXECUTION_CACHE_MAX_MB", "512"};
    auto r = read_budget(execution_cache_budget);
    BOOST_TEST(r.budget.max_bytes == 512 * 1048576);
    BOOST_TEST(r.budget.max_entries == 256u);
    BOOST_TEST(r.warning.empty());
  }
  {
    env_guard env{"CODEFYUI_NODE_STATE_STORE_MAX_MB", "0"};
    auto r = read_budget(node_state_store_budget);
    BOOST_TEST(r.budget.max_bytes == 0);
    BOOST_TEST(r.budget.max_entries == 200u);
    BOOST_TEST(r.warning.empty());
  }
}

BOOST_AUTO_TEST_CASE(a_bad_env_value_keeps_the_default_and_warns) {
  using namespace cdui::storage;
  for (const char* bad : {"lots", "-5", "12abc", "1.5", " 7", "99999999999999999999",
                          "9000000000000"}) {
    env_guard env{"CODEFYUI_RUN_OUTPUT_STORE_MAX_MB", bad};
    auto r = read_budget(run_output_store_budget);
    BOOST_TEST(r.budget.max_bytes == 2147483648, "value " << bad);
    BOOST_TEST(r.warning.find("CODEFYUI_RUN_OUTPUT_STORE_MAX_MB") != std::string::npos);
    BOOST_TEST(r.warning.find(std::string{"'"} + bad + "'") != std::string::npos, r.warning);
    BOOST_TEST(r.warning.find("2048 MB") != std::string::npos, r.warning);
  }
}

BOOST_AUTO_TEST_SUITE_END()
