// Whether a part of a DDP run across workers can go to its worker (actors/policy/part_assignment.hpp).
#include <boost/test/unit_test.hpp>

#include "actors/policy/part_assignment.hpp"

using namespace cdui;
using cdui::policy::assignment_refusal;
using cdui::policy::is_loopback_host;

namespace {

/// A table with workers w1 and w2 connected, on machines `m1` and `m2`.
policy::worker_table two_workers(const std::string& m1, const std::string& m2) {
  policy::worker_table t{{"0.1.0", "nodes-A", "secret-token", 1000, {}}};
  for (auto [name, machine] : {std::pair{"w1", m1}, std::pair{"w2", m2}}) {
    hello h;
    h.name = name;
    h.version = "0.1.0";
    h.credential = "secret-token";
    h.node_types_digest = "nodes-A";
    h.devices = {{"cpu", "cpu", "cpu-" + machine, 1 << 30, 1 << 29}, {"sim:0", "sim", "SIM-" + machine, 1 << 30, 1 << 30}};
    BOOST_REQUIRE(t.hello(std::string{"id-"} + name, h, 100).accepted);
  }
  return t;
}

/// w2's part (ranks 1..) of a run whose rank 0 is on w1, meeting at `store_host`.
assign_run part_at(const std::string& store_host) {
  assign_run a;
  a.run_id = "r-rank1";
  a.ddp = {2, 1, {"w1/sim:0", "w2/sim:0"}, store_host, 40000, "secret"};
  return a;
}

} // namespace

BOOST_AUTO_TEST_SUITE(part_assignment_test)

BOOST_AUTO_TEST_CASE(loopback_addresses_are_told_from_others) {
  for (auto host : {"127.0.0.1", "127.0.1.1", "localhost", "::1"})
    BOOST_TEST(is_loopback_host(host), host);
  for (auto host : {"10.0.0.5", "128.0.0.1", "node-a", "", "127.0.0", "fe80::1"})
    BOOST_TEST(!is_loopback_host(host), host);
}

BOOST_AUTO_TEST_CASE(a_part_on_another_machine_is_refused_a_store_on_rank_0s_loopback) {
  auto t = two_workers("node-a", "node-b");
  auto why = assignment_refusal(t, part_at("127.0.0.1"), "w2");
  BOOST_REQUIRE(why.has_value());
  BOOST_TEST(*why == "rank 0's worker 'w1' hosts the ranks' store at 127.0.0.1, a loopback address, which worker "
                     "'w2' on another machine cannot reach: start the agent of 'w1' with --rendezvous-host set to "
                     "an address of its machine that 'w2' reaches");
  BOOST_TEST(!assignment_refusal(t, part_at("10.0.0.5"), "w2"));
  // Rank 0's own assignment has no store yet.
  auto rank0 = part_at("");
  rank0.ddp.first_rank = 0;
  BOOST_TEST(!assignment_refusal(t, rank0, "w1"));
}

BOOST_AUTO_TEST_CASE(a_part_on_rank_0s_machine_meets_it_on_loopback) {
  auto t = two_workers("node-a", "node-a");
  BOOST_TEST(!assignment_refusal(t, part_at("127.0.0.1"), "w2"));
}

BOOST_AUTO_TEST_CASE(a_worker_that_went_away_gets_nothing) {
  auto t = two_workers("node-a", "node-b");
  auto why = assignment_refusal(t, part_at("10.0.0.5"), "w3");
  BOOST_REQUIRE(why.has_value());
  BOOST_TEST(*why == "worker 'w3' went away before the run could be sent to it");
  t.lost("w2", "id-w2");
  auto whole = part_at("10.0.0.5");
  whole.ddp = {};
  BOOST_TEST(assignment_refusal(t, whole, "w2").value_or("") == "worker 'w2' went away before the run could be sent to it");
  t.remove("w2");
  BOOST_TEST(assignment_refusal(t, part_at("10.0.0.5"), "w2").value_or("")
             == "worker 'w2' went away before the run could be sent to it");
}

BOOST_AUTO_TEST_CASE(a_part_waits_for_a_worker_that_is_away) {
  auto t = two_workers("node-a", "node-b");
  t.lost("w2", "id-w2");
  BOOST_REQUIRE(!t.connected("w2"));
  // Its worker's actor sends it when the worker is back, or gives it up after the grace.
  BOOST_TEST(!assignment_refusal(t, part_at("10.0.0.5"), "w2"));
  BOOST_TEST(assignment_refusal(t, part_at("127.0.0.1"), "w2").has_value(), "the loopback check still holds");
}

BOOST_AUTO_TEST_SUITE_END()
