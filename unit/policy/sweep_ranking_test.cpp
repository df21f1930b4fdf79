#include <boost/test/unit_test.hpp>

#include "actors/policy/sweep_ranking.hpp"

using namespace cdui;
using namespace cdui::policy;

BOOST_AUTO_TEST_SUITE(sweep_ranking_test)

BOOST_AUTO_TEST_CASE(ties_share_a_rank_and_missing_metrics_come_last) {
  std::vector<variant_score> scores{{0, 0.5}, {1, std::nullopt}, {2, 0.2}, {3, 0.5}, {4, std::nullopt}, {5, 0.9}};
  auto low = rank_variants(scores, false);
  std::vector<std::size_t> order, ranks;
  for (const auto& r : low) {
    order.push_back(r.index);
    ranks.push_back(r.rank);
  }
  BOOST_TEST(order == (std::vector<std::size_t>{2, 0, 3, 5, 1, 4}), boost::test_tools::per_element());
  BOOST_TEST(ranks == (std::vector<std::size_t>{1, 2, 2, 4, 0, 0}), boost::test_tools::per_element());
  auto high = rank_variants(scores, true);
  BOOST_TEST(high.front().index == 5u);
  BOOST_TEST(high[1].index == 0u);
  BOOST_TEST(high[2].index == 3u);
  BOOST_TEST(high[2].rank == 2u);
  BOOST_TEST(high.back().index == 4u);
  BOOST_TEST(rank_variants({{0, std::nullopt}}, true).front().rank == 0u);
}

BOOST_AUTO_TEST_CASE(the_objective_is_read_by_name_or_by_node_and_name) {
  std::string metrics = R"({"eval": {"accuracy": 0.9}, "loop": {"loss": 0.25, "accuracy": 0.8}})";
  BOOST_TEST(*objective_value(metrics, "loss") == 0.25);
  BOOST_TEST(*objective_value(metrics, "loop.accuracy") == 0.8);
  BOOST_TEST(*objective_value(metrics, "accuracy") == 0.9);  // the first node by id
  BOOST_TEST(!objective_value(metrics, "f1"));
  BOOST_TEST(!objective_value(R"({"loop": {"loss": "nan"}})", "loss"));
  BOOST_TEST(!objective_value("{}", "loss"));
  BOOST_TEST(!objective_value("not json", "loss"));
}

BOOST_AUTO_TEST_CASE(a_sweeps_state_follows_its_children) {
  using s = run_status;
  BOOST_TEST(to_string(state_of({s::queued, s::queued}, false)) == std::string{"queued"});
  BOOST_TEST(to_string(state_of({s::running, s::queued}, false)) == std::string{"running"});
  BOOST_TEST(to_string(state_of({s::succeeded, s::queued}, false)) == std::string{"running"});
  BOOST_TEST(to_string(state_of({s::succeeded, s::failed}, false)) == std::string{"finished"});
  BOOST_TEST(to_string(state_of({s::failed, s::interrupted}, false)) == std::string{"failed"});
  BOOST_TEST(to_string(state_of({s::running, s::cancelled}, true)) == std::string{"cancelling"});
  BOOST_TEST(to_string(state_of({s::succeeded, s::cancelled}, true)) == std::string{"cancelled"});
  BOOST_TEST((*parse_sweep_state("cancelling") == sweep_state::cancelling));
  BOOST_TEST(!parse_sweep_state("done"));
  auto counts = count_by_status({s::queued, s::succeeded, s::succeeded});
  BOOST_TEST(counts["succeeded"] == 2u);
  BOOST_TEST(counts["queued"] == 1u);
  BOOST_TEST(counts["running"] == 0u);
  BOOST_TEST(counts.size() == 7u);
}

BOOST_AUTO_TEST_SUITE_END()
