// The worker registry's policy: who may join, under which name, over which connection.
#include <boost/test/unit_test.hpp>

#include "actors/policy/worker_table.hpp"
#include "storage/credentials.hpp"

using namespace cdui;
using cdui::policy::worker_table;

namespace {

worker_table table() {
  return worker_table{{"0.1.0", "nodes-A", "secret-token", 1000, {}}};
}

cdui::hello hello_from(const std::string& name, const std::string& version = "0.1.0",
                       const std::string& credential = "secret-token",
                       const std::string& nodes = "nodes-A") {
  cdui::hello h;
  h.name = name;
  h.version = version;
  h.credential = credential;
  h.node_types_digest = nodes;
  h.devices = {{"cpu", "cpu", "cpu-host", 1 << 30, 1 << 29}, {"sim:0", "sim", "SIM-1", 1 << 30, 1 << 30}};
  return h;
}

} // namespace

BOOST_AUTO_TEST_SUITE(worker_table_test)

BOOST_AUTO_TEST_CASE(another_version_or_a_bad_credential_is_refused_and_listed) {
  auto t = table();
  auto old = t.hello("id-1", hello_from("gpu-box", "0.0.9"), 100);
  BOOST_TEST(!old.accepted);
  BOOST_TEST(old.reason.find("the agent runs cdui 0.0.9 and this server runs cdui 0.1.0")
             != std::string::npos, old.reason);
  auto wrong = t.hello("id-2", hello_from("gpu-box", "0.1.0", "guess"), 200);
  BOOST_TEST(!wrong.accepted);
  BOOST_TEST(wrong.reason.find("the credential is not valid") != std::string::npos, wrong.reason);
  BOOST_TEST(t.workers().empty());
  BOOST_REQUIRE(t.refused().size() == 2u);
  BOOST_TEST(t.refused()[0].version == "0.0.9");
  BOOST_TEST(t.refused()[1].time_ms == 200);
  for (int i = 0; i < 100; ++i)
    (void)t.hello("id-x", hello_from("x", "9.9.9"), 300 + i);
  BOOST_TEST(t.refused().size() == worker_table::refused_kept);
  BOOST_TEST(t.refused().back().time_ms == 399);
}

BOOST_AUTO_TEST_CASE(a_worker_joins_over_its_connection_until_that_is_lost) {
  auto t = table();
  BOOST_TEST(t.hello("id-1", hello_from("gpu-box"), 0).accepted);
  const auto* w = t.by_name("gpu-box");
  BOOST_REQUIRE(w != nullptr);
  BOOST_TEST(w->identity == "id-1");
  BOOST_TEST(w->hello.devices.size() == 2u);
  BOOST_TEST(w->hello.credential.empty());  // the secret is not kept
  BOOST_TEST(!w->enrolled);
  BOOST_REQUIRE(t.by_identity("id-1") != nullptr);
  BOOST_TEST(*t.by_identity("id-1") == "gpu-box");
  BOOST_TEST(t.connected("gpu-box"));

  // Its actor gave the connection up: its messages are no longer a worker's, its entry stays.
  t.lost("gpu-box", "id-1");
  BOOST_TEST(t.by_identity("id-1") == nullptr);
  BOOST_TEST(!t.connected("gpu-box"));
  BOOST_TEST(t.by_name("gpu-box") != nullptr);
  BOOST_TEST(t.hello("id-2", hello_from("gpu-box"), 10).accepted);
  BOOST_TEST(t.connected("gpu-box"));
  // A late word about a connection a newer one replaced changes nothing.
  t.lost("gpu-box", "id-1");
  BOOST_TEST(t.connected("gpu-box"));
}

BOOST_AUTO_TEST_CASE(the_newest_connection_of_a_name_wins_and_a_drain_survives_it) {
  auto t = table();
  BOOST_TEST(t.hello("old", hello_from("gpu-box"), 0).accepted);
  BOOST_TEST(t.set_draining("gpu-box", true));
  BOOST_TEST(t.by_name("gpu-box")->draining);
  auto again = t.hello("new", hello_from("gpu-box"), 10);
  BOOST_TEST(again.accepted);
  BOOST_REQUIRE(again.replaced_identity.has_value());
  BOOST_TEST(*again.replaced_identity == "old");
  BOOST_TEST(t.by_identity("old") == nullptr);  // the replaced connection is no longer a worker's
  BOOST_REQUIRE(t.by_identity("new") != nullptr);
  BOOST_TEST(t.by_name("gpu-box")->draining);
  BOOST_TEST(t.set_draining("gpu-box", false));
  BOOST_TEST(!t.by_name("gpu-box")->draining);
  BOOST_TEST(!t.set_draining("nobody", true));
  BOOST_TEST(t.workers().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_name_that_could_leave_its_folder_is_refused) {
  auto t = table();
  std::vector<std::string> bad_names{"", "../escape", ".hidden", "-x", "a/b", "sp ace",
                                     std::string(65, 'a'), "local", "any"};
  for (const auto& bad : bad_names)
    BOOST_TEST(!t.hello("id", hello_from(bad), 0).accepted, bad);
  BOOST_TEST(t.hello("id", hello_from("gpu-box_2.lab"), 0).accepted);
  BOOST_TEST(cdui::policy::is_valid_worker_name(std::string(64, 'a')));
}

BOOST_AUTO_TEST_CASE(a_connection_that_never_said_hello_is_no_workers) {
  auto t = table();
  BOOST_TEST(t.by_identity("never-said-hello") == nullptr);
  BOOST_TEST(!t.connected("never-said-hello"));
  BOOST_TEST(t.workers().empty());
}

BOOST_AUTO_TEST_CASE(an_enrolled_worker_joins_with_its_credential_and_a_rekey_ends_the_old_one) {
  auto t = table();
  // Not enrolled: a credential that is not the token says so.
  auto stranger = t.hello("id-0", hello_from("remote", "0.1.0", "cdui-wk-guess"), 0);
  BOOST_TEST(!stranger.accepted);
  BOOST_TEST(stranger.reason.find("no worker named 'remote' is enrolled") != std::string::npos,
             stranger.reason);

  t.enroll("remote", cdui::storage::credential_hash("cdui-wk-first"));
  BOOST_TEST(t.is_enrolled("remote"));
  BOOST_TEST(t.hello("id-1", hello_from("remote", "0.1.0", "cdui-wk-first"), 10).accepted);
  BOOST_TEST(t.by_name("remote")->enrolled);
  // Another worker's name does not take its credential.
  BOOST_TEST(!t.hello("id-2", hello_from("other", "0.1.0", "cdui-wk-first"), 20).accepted);

  t.enroll("remote", cdui::storage::credential_hash("cdui-wk-second"));  // re-key
  BOOST_TEST(t.by_identity("id-1") != nullptr);  // the live connection stays
  auto old = t.hello("id-3", hello_from("remote", "0.1.0", "cdui-wk-first"), 40);
  BOOST_TEST(!old.accepted);
  BOOST_TEST(old.reason.find("not the one its latest enrollment or re-key gave") != std::string::npos,
             old.reason);
  BOOST_TEST(t.hello("id-4", hello_from("remote", "0.1.0", "cdui-wk-second"), 50).accepted);
  // The session token still works for any name, and marks it as a same-host agent.
  BOOST_TEST(t.hello("id-5", hello_from("remote"), 60).accepted);
  BOOST_TEST(!t.by_name("remote")->enrolled);
}

BOOST_AUTO_TEST_CASE(a_removed_worker_loses_its_entry_connection_and_enrollment) {
  auto t = table();
  t.enroll("remote", cdui::storage::credential_hash("cdui-wk-first"));
  t.enroll("never-came", cdui::storage::credential_hash("cdui-wk-x"));
  BOOST_TEST(t.hello("id-1", hello_from("remote", "0.1.0", "cdui-wk-first"), 0).accepted);
  auto removed = t.remove("remote");
  BOOST_REQUIRE(removed.has_value());
  BOOST_TEST(removed->identity == "id-1");
  BOOST_TEST(t.by_name("remote") == nullptr);
  BOOST_TEST(t.by_identity("id-1") == nullptr);
  BOOST_TEST(!t.hello("id-2", hello_from("remote", "0.1.0", "cdui-wk-first"), 20).accepted);
  // Enrolled but never connected: removed too, with an empty entry.
  auto never = t.remove("never-came");
  BOOST_REQUIRE(never.has_value());
  BOOST_TEST(never->identity.empty());
  BOOST_TEST(!t.remove("nobody").has_value());
}

BOOST_AUTO_TEST_CASE(a_fleet_pattern_is_a_worker_name_prefix_and_a_star) {
  using cdui::policy::is_fleet_pattern;
  for (auto ok : {"slurm-*", "k8s.gpu-*", "n*", "_*"})
    BOOST_TEST(is_fleet_pattern(ok), ok);
  for (auto bad : {"*", "slurm-", "-x*", ".x*", "a/b*", "a**", "a*b", "a b*", ""})
    BOOST_TEST(!is_fleet_pattern(bad), bad);
  BOOST_TEST(!is_fleet_pattern(std::string(64, 'a') + "*"));  // its members could not be named
  BOOST_TEST(cdui::policy::is_valid_enrollment("gpu-box"));
  BOOST_TEST(cdui::policy::is_valid_enrollment("slurm-*"));
  BOOST_TEST(!cdui::policy::is_valid_enrollment("local"));
}

BOOST_AUTO_TEST_CASE(a_fleet_credential_joins_its_members_but_no_worker_enrolled_by_name) {
  auto t = table();
  t.enroll("slurm-*", cdui::storage::credential_hash("cdui-wk-fleet"));
  t.enroll("slurm-gpu-*", cdui::storage::credential_hash("cdui-wk-gpus"));
  t.enroll("slurm-login", cdui::storage::credential_hash("cdui-wk-login"));

  BOOST_TEST(t.hello("id-1", hello_from("slurm-node01", "0.1.0", "cdui-wk-fleet"), 0).accepted);
  BOOST_TEST(t.hello("id-2", hello_from("slurm-node02", "0.1.0", "cdui-wk-fleet"), 0).accepted);
  BOOST_TEST(t.by_name("slurm-node01")->enrolled);
  BOOST_TEST(t.by_name("slurm-node01")->enrollment == "slurm-*");
  // Outside the prefix, the credential is nobody's.
  BOOST_TEST(!t.hello("id-3", hello_from("gpu-box", "0.1.0", "cdui-wk-fleet"), 0).accepted);
  // The longest prefix judges: the GPU fleet's members need the GPU fleet's credential.
  auto wrong_fleet = t.hello("id-4", hello_from("slurm-gpu-7", "0.1.0", "cdui-wk-fleet"), 0);
  BOOST_TEST(!wrong_fleet.accepted);
  BOOST_TEST(wrong_fleet.reason.find("of its fleet 'slurm-gpu-*'") != std::string::npos, wrong_fleet.reason);
  BOOST_TEST(t.hello("id-5", hello_from("slurm-gpu-7", "0.1.0", "cdui-wk-gpus"), 0).accepted);
  // A worker enrolled by name is its own credential's only: the fleet's does not impersonate it.
  auto impostor = t.hello("id-6", hello_from("slurm-login", "0.1.0", "cdui-wk-fleet"), 0);
  BOOST_TEST(!impostor.accepted);
  BOOST_TEST(impostor.reason.find("its latest enrollment or re-key gave") != std::string::npos, impostor.reason);

  BOOST_TEST((t.joined_by("slurm-*") == std::vector<std::string>{"slurm-node01", "slurm-node02"}));
  BOOST_TEST(t.any_connected("slurm-*"));
  // Removing the fleet: its credential joins no more (its members are removed by name).
  BOOST_REQUIRE(t.remove("slurm-*").has_value());
  BOOST_TEST(t.by_name("slurm-node01") != nullptr);  // the registry removes each member itself
  BOOST_TEST(t.remove("slurm-node01").has_value());
  BOOST_TEST(!t.hello("id-7", hello_from("slurm-node01", "0.1.0", "cdui-wk-fleet"), 0).accepted);
  BOOST_TEST(t.any_connected("slurm-*"));  // node02 stays connected until it is removed
  BOOST_TEST(t.remove("slurm-node02").has_value());
  BOOST_TEST(!t.any_connected("slurm-*"));
}

BOOST_AUTO_TEST_SUITE_END()
