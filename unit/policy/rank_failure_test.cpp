// Which failure a DDP run across workers ends with (actors/policy/rank_failure.hpp).
#include <boost/test/unit_test.hpp>

#include "actors/policy/rank_failure.hpp"

using namespace cdui;
using cdui::policy::ddp_run_outcome;
using cdui::policy::lost_the_other_ranks;

namespace {

const std::string killed = "the run's process was killed by signal 9 (SIGKILL) before it finished";
const std::string peer_closed = "DDP rank 3 of 4 (on worker 'w2') failed: [../third_party/gloo/gloo/transport/tcp/"
                                "pair.cc:598] Connection closed by peer [127.0.0.1]:39331";
const std::string part_killed = "DDP rank 3 of 4 (on worker 'w2') failed: " + killed;

} // namespace

BOOST_AUTO_TEST_SUITE(rank_failure_test)

BOOST_AUTO_TEST_CASE(what_the_ranks_left_say_when_one_dies_is_told_from_a_failure_of_their_own) {
  BOOST_TEST(lost_the_other_ranks(peer_closed));
  BOOST_TEST(lost_the_other_ranks("[enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] "
                                  "write: Broken pipe"));
  BOOST_TEST(lost_the_other_ranks("DDP rank 2 of 4 could not join the other ranks: connect [127.0.0.1]:4535: "
                                  "Connection refused"));
  // NCCL's words between CUDA cards, and the store client's when rank 0's store went.
  BOOST_TEST(lost_the_other_ranks("NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was "
                                  "a network error, NCCL version 2.27.5"));
  BOOST_TEST(lost_the_other_ranks("[../torch/csrc/distributed/c10d/TCPStore.cpp] failed to recv, got 0 bytes"));
  BOOST_TEST(!lost_the_other_ranks(killed));
  BOOST_TEST(!lost_the_other_ranks("node 'loop' (TrainingLoop): out of memory on sim:0"));
}

BOOST_AUTO_TEST_CASE(rank_0_killed_is_the_cause_though_a_rank_it_left_reported_first) {
  auto run = ddp_run_outcome({run_status::failed, killed, "{}"}, peer_closed);
  BOOST_TEST(run.error == killed);
}

BOOST_AUTO_TEST_CASE(a_rank_killed_on_another_worker_is_the_cause_when_rank_0_only_lost_it) {
  auto run = ddp_run_outcome({run_status::failed, "Connection closed by peer [127.0.0.1]:4242", "{\"a\":1}"},
                             part_killed);
  BOOST_TEST((run.status == run_status::failed));
  BOOST_TEST(run.error == part_killed);
  BOOST_TEST(run.final_metrics == "{\"a\":1}");
}

BOOST_AUTO_TEST_CASE(rank_0_stopped_for_a_part_that_failed_ends_with_the_parts_failure) {
  auto run = ddp_run_outcome({run_status::interrupted, "", "{}"}, peer_closed);
  BOOST_TEST((run.status == run_status::failed));
  BOOST_TEST(run.error == peer_closed);
  BOOST_TEST(ddp_run_outcome({run_status::failed, "its own", "{}"}, part_killed).error == part_killed);
}

BOOST_AUTO_TEST_CASE(ranks_that_only_lost_the_others_after_a_cancel_do_not_make_it_a_failure) {
  BOOST_TEST(!policy::part_failure_counts(peer_closed, true));
  BOOST_TEST(policy::part_failure_counts(peer_closed, false));
  BOOST_TEST(policy::part_failure_counts(part_killed, true), "a rank killed while stopping still counts");
}

BOOST_AUTO_TEST_CASE(a_success_or_no_failed_part_keeps_rank_0s_outcome) {
  BOOST_TEST((ddp_run_outcome({run_status::succeeded, "", "{}"}, part_killed).status == run_status::succeeded));
  BOOST_TEST(ddp_run_outcome({run_status::failed, killed, "{}"}, "").error == killed);
}

BOOST_AUTO_TEST_CASE(a_parts_rank_that_failed_on_its_own_is_its_cause_whichever_its_agent_heard_first) {
  auto rank2_lost = "DDP rank 2 of 4 (on worker 'w2') failed: " + peer_closed;
  // Rank 3 failed while rank 2 (the part's process) still ran: rank 3, as before.
  BOOST_TEST(policy::rank_failure_is_cause(true, "the run's process was killed by signal 9", part_killed, false));
  BOOST_TEST(policy::rank_failure_is_cause(false, "", part_killed, true));
  // Rank 2 ended first, having only lost rank 3, which was killed: rank 3.
  BOOST_TEST(policy::rank_failure_is_cause(true, rank2_lost, part_killed, true));
  // Rank 2 failed on its own first, and rank 3 only lost it: rank 2.
  BOOST_TEST(!policy::rank_failure_is_cause(true, part_killed, rank2_lost, true));
  // Both only lost the others (rank 0 went): the first, the process's.
  BOOST_TEST(!policy::rank_failure_is_cause(true, rank2_lost, peer_closed, true));
}

BOOST_AUTO_TEST_CASE(rank_0_that_only_lost_the_others_waits_for_the_parts_still_running_to_say_why) {
  // w1's report (rank 1 lost rank 3) came before w2's (rank 3 killed): the run waits for w2's.
  run_outcome lost{run_status::failed, "DDP rank 1 of 4 (on worker 'w1') failed: " + peer_closed, "{}"};
  BOOST_TEST(policy::awaits_part_failure(lost, false, true));
  // Not once a part has said why, nor when no part runs any more, nor for a failure of its own or
  // a success.
  BOOST_TEST(!policy::awaits_part_failure(lost, true, true));
  BOOST_TEST(!policy::awaits_part_failure(lost, false, false));
  BOOST_TEST(!policy::awaits_part_failure({run_status::failed, killed, "{}"}, false, true));
  BOOST_TEST(!policy::awaits_part_failure({run_status::succeeded, "", "{}"}, false, true));
}

BOOST_AUTO_TEST_SUITE_END()
