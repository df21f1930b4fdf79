// A worker's status over (given) time: its hello, its heartbeats, the operator's drain.
#include <boost/test/unit_test.hpp>

#include "actors/policy/worker_health.hpp"

using namespace cdui;
using cdui::policy::worker_health;
using cdui::policy::worker_status;

namespace {

cdui::hello hello_from(const std::string& name, const std::string& nodes = "nodes-A",
                       bool one_shot = false) {
  cdui::hello h;
  h.name = name;
  h.version = "0.1.0";
  h.node_types_digest = nodes;
  h.one_shot = one_shot;
  h.devices = {{"cpu", "cpu", "cpu-host", 1 << 30, 1 << 29}, {"sim:0", "sim", "SIM-1", 1 << 30, 1 << 30}};
  return h;
}

worker_health joined(const cdui::hello& h, std::int64_t now_ms = 0, bool draining = false) {
  return worker_health{{"nodes-A", 1000}, h, false, draining, now_ms};
}

} // namespace

BOOST_AUTO_TEST_SUITE(worker_health_test)

BOOST_AUTO_TEST_CASE(a_worker_joins_online_and_late_heartbeats_degrade_then_disconnect_it) {
  auto w = joined(hello_from("gpu-box"));
  const auto& r = w.record();
  BOOST_TEST((r.status == worker_status::online));
  BOOST_TEST(r.devices.size() == 2u);
  BOOST_TEST(w.accepts_runs());

  BOOST_TEST(!w.tick(1999));  // 2 intervals: still on time
  BOOST_TEST(w.tick(2500));
  BOOST_TEST((r.status == worker_status::degraded));
  BOOST_TEST(r.reason == "heartbeat late: the last one came 2.5 s ago");
  BOOST_TEST(!w.accepts_runs());  // a late worker takes no new runs
  BOOST_TEST((w.availability() == cdui::worker_availability::late));
  w.heartbeat({r.devices, {"run-1"}}, 2600);
  BOOST_TEST((r.status == worker_status::online));
  BOOST_TEST(r.running_runs == std::vector<std::string>{"run-1"});
  BOOST_TEST(w.accepts_runs());

  BOOST_TEST(!w.tick(4000));
  BOOST_TEST(w.tick(5700));
  BOOST_TEST((r.status == worker_status::disconnected));
  BOOST_TEST(r.reason == "no heartbeat for 3.1 s");
  BOOST_TEST(r.disconnected_ms == 5700);
  BOOST_TEST(!w.accepts_runs());
  BOOST_TEST((w.availability() == cdui::worker_availability::disconnected));
  // Disconnected stays so: a heartbeat after it changes nothing (the agent says hello again).
  w.heartbeat({{}, {}}, 5800);
  BOOST_TEST(!w.tick(5900));
  BOOST_TEST((r.status == worker_status::disconnected));
}

BOOST_AUTO_TEST_CASE(other_node_types_make_a_worker_degraded_but_it_takes_runs) {
  auto w = joined(hello_from("w", "nodes-B"));
  BOOST_TEST((w.record().status == worker_status::degraded));
  BOOST_TEST(w.record().reason
             == "its node types differ from the server's (digest nodes-B, the server's nodes-A)");
  BOOST_TEST(w.accepts_runs());
}

BOOST_AUTO_TEST_CASE(a_drain_closes_it_to_new_runs_until_undone) {
  auto w = joined(hello_from("gpu-box"), 0, true);
  BOOST_TEST((w.record().status == worker_status::draining));
  BOOST_TEST(!w.accepts_runs());
  BOOST_TEST((w.availability() == cdui::worker_availability::draining));
  w.heartbeat({{}, {}}, 500);
  BOOST_TEST((w.record().status == worker_status::draining));
  w.set_draining(false, 600);
  BOOST_TEST((w.record().status == worker_status::online));
  BOOST_TEST(w.accepts_runs());
  w.set_draining(true, 700);
  BOOST_TEST(!w.accepts_runs());
}

BOOST_AUTO_TEST_CASE(a_connection_lost_otherwise_is_disconnected_with_the_reason) {
  auto w = joined(hello_from("gpu-box"), 100);
  w.lose("it was not connected when the server's actor for it was replaced", 200);
  BOOST_TEST((w.record().status == worker_status::disconnected));
  BOOST_TEST(w.record().reason == "it was not connected when the server's actor for it was replaced");
  BOOST_TEST(w.record().disconnected_ms == 200);
  BOOST_TEST(!w.tick(10000));
  BOOST_TEST(!w.accepts_runs());
}

BOOST_AUTO_TEST_SUITE_END()
