// Which ranks an agent starts for an assignment (actors/agent/supervisor_ddp.hpp): within one
// worker, and a worker's part of a DDP run across workers; a part no server sends is refused.
#include <boost/test/unit_test.hpp>

#include "actors/agent/supervisor_ddp.hpp"

using namespace cdui;
using actors::supervisor_ddp::plan_ranks;

namespace {

const std::string ddp_graph =
  R"({"nodes": [{"id": "loop", "type": "TrainingLoop", "params": {"strategy": "ddp"}}], "edges": []})";

assign_run part(int first, std::string host = "10.0.0.5", int port = 41234) {
  assign_run a;
  a.graph_json = ddp_graph;
  a.ddp = {4, first, {"w1/sim:0", "w1/sim:1", "w2/sim:0", "w2/sim:1"}, std::move(host), port, "secret"};
  return a;
}

} // namespace

BOOST_AUTO_TEST_SUITE(supervisor_ddp_test)

BOOST_AUTO_TEST_CASE(within_one_worker_the_run_is_rank_0_and_its_other_cards_the_other_ranks) {
  assign_run a;
  a.graph_json = ddp_graph;
  auto p = plan_ranks(a, 3, "127.0.0.1");
  BOOST_TEST(p.world == 3);
  BOOST_TEST(p.first == 0);
  BOOST_TEST(p.others == (std::vector<int>{1, 2}));
  BOOST_TEST(p.run_json.is_null());
  BOOST_TEST(!p.wait_for_store);
  BOOST_TEST(plan_ranks(a, 1, "127.0.0.1").world == 1);
}

BOOST_AUTO_TEST_CASE(rank_0s_worker_hosts_the_store_and_starts_its_other_ranks_once_it_is_up) {
  auto p = plan_ranks(part(0, "", 0), 2, "10.0.0.9");
  BOOST_TEST(p.refused.empty(), p.refused);
  BOOST_TEST(p.world == 4);
  BOOST_TEST(p.others == (std::vector<int>{1}));
  BOOST_TEST(p.wait_for_store);
  BOOST_TEST(p.run_json["store"]["host"] == "10.0.0.9");
  BOOST_TEST(p.run_json["store"]["port"] == 0);
  BOOST_TEST(p.run_json["first_rank"] == 0);
}

BOOST_AUTO_TEST_CASE(another_workers_part_meets_rank_0s_store_where_the_server_said) {
  auto p = plan_ranks(part(2), 2, "10.0.0.9");
  BOOST_TEST(p.refused.empty(), p.refused);
  BOOST_TEST(p.first == 2);
  BOOST_TEST(p.others == (std::vector<int>{3}));
  BOOST_TEST(!p.wait_for_store);
  BOOST_TEST(p.run_json["store"]["host"] == "10.0.0.5");
  BOOST_TEST(p.run_json["store"]["port"] == 41234);
  BOOST_TEST(p.run_json["devices"].size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_part_that_is_not_ranks_of_the_run_is_refused) {
  BOOST_TEST(plan_ranks(part(3), 2, "h").refused.find("is not one of the run's ranks") != std::string::npos);
  BOOST_TEST(!plan_ranks(part(-1), 2, "h").refused.empty());
  BOOST_TEST(!plan_ranks(part(2147483647), 2, "h").refused.empty());
  BOOST_TEST(!plan_ranks(part(2, "", 41234), 2, "h").refused.empty());
  BOOST_TEST(!plan_ranks(part(2, "h", 70000), 2, "h").refused.empty());
  auto short_list = part(2);
  short_list.ddp.devices.pop_back();
  BOOST_TEST(!plan_ranks(short_list, 2, "h").refused.empty());
}

BOOST_AUTO_TEST_CASE(the_run_fails_in_the_words_of_the_rank_that_failed_first) {
  using actors::supervisor_ddp::run_end;
  const run_outcome rank0_failed{run_status::failed, "node 'loop' failed: out of memory", "{}"};
  const run_outcome rank0_succeeded{run_status::succeeded, "", R"({"loop": {}})"};
  actors::supervisor_state st;
  BOOST_TEST(run_end(st, rank0_failed).error == rank0_failed.error);
  // Rank 2 failed while rank 0 ran: the run fails with rank 2's error (rank 0 was killed for it).
  st.rank_failure = "DDP rank 2 of 4 failed: node 'loop' failed: NaN";
  BOOST_TEST(run_end(st, rank0_failed).error == *st.rank_failure);
  BOOST_TEST(run_end(st, rank0_succeeded).status == run_status::failed);
  BOOST_TEST(run_end(st, rank0_succeeded).final_metrics == rank0_succeeded.final_metrics);
  // Rank 2 failed after rank 0 had failed (it lost rank 0): rank 0's error is the cause.
  st.rank_failure_after_exit = true;
  BOOST_TEST(run_end(st, rank0_failed).error == rank0_failed.error);
  BOOST_TEST(run_end(st, rank0_succeeded).error == *st.rank_failure);
  // Killed at its stop deadline: it says so, whatever the killed processes said.
  st.killed_at_stop = run_outcome{run_status::cancelled, "it did not stop within 10 s", "{}"};
  BOOST_TEST(run_end(st, rank0_failed).status == run_status::cancelled);
  BOOST_TEST(run_end(st, rank0_failed).error == "it did not stop within 10 s");
}

BOOST_AUTO_TEST_SUITE_END()
