#include <boost/test/unit_test.hpp>

#include "apps/run_lookup.hpp"

using namespace cdui;
using namespace cdui::apps;

BOOST_AUTO_TEST_SUITE(run_lookup_test)

namespace {

run_info run(std::string id, std::string name, run_status status = run_status::succeeded) {
  run_info r;
  r.id = std::move(id);
  r.name = std::move(name);
  r.status = status;
  return r;
}

const std::vector<run_info> runs{run("3b0b67a2", "moons"), run("3b1f0c11", "mlp", run_status::running),
                                 run("9c444b3c", "mlp"), run("0aa4d2e1", "3b0b")};

} // namespace

BOOST_AUTO_TEST_CASE(a_whole_id_names_its_run) {
  auto found = find_run("9c444b3c", runs);
  BOOST_TEST(found.id == "9c444b3c");
  BOOST_TEST(found.error.empty());
}

BOOST_AUTO_TEST_CASE(a_unique_prefix_names_its_run) {
  BOOST_TEST(find_run("9", runs).id == "9c444b3c");
  BOOST_TEST(find_run("3b1", runs).id == "3b1f0c11");
}

BOOST_AUTO_TEST_CASE(an_ambiguous_prefix_is_refused_listing_the_matches) {
  auto found = find_run("3b", runs);
  BOOST_TEST(found.id.empty());
  BOOST_TEST(found.error.find("'3b' is the start of the ids of 2 runs") != std::string::npos, found.error);
  BOOST_TEST(found.error.find("3b0b67a2 (succeeded, 'moons')") != std::string::npos, found.error);
  BOOST_TEST(found.error.find("3b1f0c11 (running, 'mlp')") != std::string::npos, found.error);
}

BOOST_AUTO_TEST_CASE(a_unique_name_names_its_run_and_wins_over_a_prefix) {
  BOOST_TEST(find_run("moons", runs).id == "3b0b67a2");
  // "3b0b" is a run's name and the start of another's id: the name wins, as docker's does.
  BOOST_TEST(find_run("3b0b", runs).id == "0aa4d2e1");
}

BOOST_AUTO_TEST_CASE(a_name_several_runs_have_is_refused_listing_them) {
  auto found = find_run("mlp", runs);
  BOOST_TEST(found.id.empty());
  BOOST_TEST(found.error.find("'mlp' is the name of 2 runs: 3b1f0c11 (running, 'mlp'), 9c444b3c") == 0u,
             found.error);
}

BOOST_AUTO_TEST_CASE(a_word_no_run_matches_and_an_empty_one_are_refused) {
  BOOST_TEST(find_run("zz", runs).error == "no run has the id or name 'zz' (`cdui runs` lists them)");
  BOOST_TEST(!find_run("", runs).error.empty());
  BOOST_TEST(!find_run("x", {}).error.empty());
}

BOOST_AUTO_TEST_CASE(a_long_list_of_matches_is_cut) {
  std::vector<run_info> many;
  for (int i = 0; i < 25; ++i)
    many.push_back(run("ab" + std::to_string(100000 + i), "same"));
  auto found = find_run("ab", many);
  BOOST_TEST(found.error.find("25 runs") != std::string::npos, found.error);
  BOOST_TEST(found.error.find("and 15 more") != std::string::npos, found.error);
}

BOOST_AUTO_TEST_CASE(bytes_from_the_network_in_a_name_are_quoted_safely) {
  std::vector<run_info> odd{run("11111111", "a\x1b[2J\xff"), run("11112222", "a\x1b[2J\xff")};
  auto found = find_run("1111", odd);
  BOOST_TEST(found.error.find('\x1b') == std::string::npos, found.error);
}

BOOST_AUTO_TEST_SUITE_END()
