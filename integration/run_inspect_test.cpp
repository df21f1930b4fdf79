// `cdui show`, `cdui logs [-f]`, `cdui follow`, `cdui runs --wide/--json`, runs named by a prefix of
// their id or by their name, `cdui cancel` of several runs, `cdui run --set/--memory`, and the CLI's
// own words for a command line it cannot take: against a real server process on 127.0.0.1, and
// against the store when no server runs.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>

#include "testkit/graphs.hpp"
#include "testkit/server_process.hpp"

using namespace std::chrono_literals;
using cdui::test::moons_graph_json;
using cdui::test::run_cdui;
using cdui::test::run_id_in;
using cdui::test::server_process;
using cdui::test::start_cdui;
using cdui::test::write_graph;
using nlohmann::json;

namespace {

std::string file_text(const std::filesystem::path& file) {
  std::ifstream in{file};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

json node_params(const json& graph, const std::string& id) {
  for (const auto& n : graph["nodes"])
    if (n["id"] == id)
      return n.value("params", json::object());
  return nullptr;
}

/// The shortest prefix of `id` that no other of `ids` starts with (at least 3 characters).
std::string prefix_of(const std::string& id, const std::vector<std::string>& ids) {
  for (std::size_t n = 3; n < id.size(); ++n) {
    auto p = id.substr(0, n);
    if (std::none_of(ids.begin(), ids.end(),
                     [&](const auto& other) { return other != id && other.rfind(p, 0) == 0; }))
      return p;
  }
  return id;
}

} // namespace

BOOST_AUTO_TEST_SUITE(run_inspect_test)

BOOST_AUTO_TEST_CASE(show_follow_logs_and_cancel_name_runs_by_prefix_or_name_on_a_server) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto endless = write_graph(home, "endless", moons_graph_json(1'000'000, 0, 16, "sim:0"));
  auto blocker_run = run_cdui(home, {"run", endless, "--detach", "--name", "blocker"});
  BOOST_REQUIRE_MESSAGE(blocker_run.code == 0, blocker_run.err);
  auto blocker = run_id_in(blocker_run.out);
  BOOST_TEST(blocker_run.out.find("`cdui follow " + blocker + "`") != std::string::npos, blocker_run.out);
  srv.await_status(blocker, "running");

  // --set and --memory: the run trains the graph with the overrides, held to 64 MiB.
  auto graph = write_graph(home, "short", moons_graph_json(1, 0, 16, "sim:0"));
  auto waiter_run = run_cdui(home, {"run", graph, "--detach", "--name", "waiter", "--set",
                                    "loop.epochs=2", "--set", "loader.batch_size=64", "--memory", "64M"});
  BOOST_REQUIRE_MESSAGE(waiter_run.code == 0, waiter_run.err);
  auto waiter = run_id_in(waiter_run.out);
  // A queued run has no folder yet: it is made when the run starts.
  BOOST_TEST(!std::filesystem::exists(home.path() / "runs" / waiter));
  BOOST_TEST(srv.get_json("/api/runs/" + waiter)["options"]["target"]["memory_gib"] == 0.0625);

  // show, by name: why it waits, its place, budget and folder.
  auto shown = run_cdui(home, {"show", "waiter"});
  BOOST_TEST(shown.code == 0, shown.err);
  for (auto want : {"run:      " + waiter, std::string{"status:   queued"},
                    std::string{"queue:    position 1 in the queue of sim:0"},
                    "waits:    position 1 in the queue of sim:0, behind run " + blocker,
                    std::string{"device:   sim:0"}, std::string{"worker:   - (this server)"},
                    std::string{"budget:   64.0 MiB"},
                    "folder:   " + (home.path() / "runs" / waiter).string()})
    BOOST_TEST(shown.out.find(want) != std::string::npos, want << " in\n" << shown.out);
  auto as_json = run_cdui(home, {"show", waiter.substr(0, 8), "--json"});
  BOOST_TEST(as_json.code == 0, as_json.err);
  BOOST_TEST(json::parse(as_json.out)["run_id"] == waiter);

  // follow re-attaches while it waits, and sees it to the end once the blocker is cancelled.
  std::vector<std::string> ids{blocker, waiter};
  auto follower = start_cdui(home, {"follow", prefix_of(waiter, ids)});
  BOOST_REQUIRE_MESSAGE(follower->wait_for_output("queued, position 1 on sim:0", 60s),
                        follower->out() << follower->err());
  auto cancelled = run_cdui(home, {"cancel", prefix_of(blocker, ids)});
  BOOST_TEST(cancelled.code == 0, cancelled.err);
  BOOST_TEST(cancelled.out.find("run " + blocker + ": cancel requested") != std::string::npos, cancelled.out);
  auto code = follower->wait_for(120s);
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 0, follower->out() << follower->err());
  BOOST_TEST(follower->out().find("[loop] epoch 2 train_loss") != std::string::npos, follower->out());
  BOOST_TEST(follower->out().find("run " + waiter + " succeeded in") != std::string::npos, follower->out());
  BOOST_TEST(follower->out().find("final metrics:") != std::string::npos, follower->out());

  auto submitted = json::parse(file_text(home.path() / "runs" / waiter / "graph.json"));
  BOOST_TEST(node_params(submitted, "loop")["epochs"] == 2);
  BOOST_TEST(node_params(submitted, "loader")["batch_size"] == 64);

  // logs: the run folder's output.log, line for line.
  auto logs = run_cdui(home, {"logs", waiter});
  BOOST_TEST(logs.code == 0, logs.err);
  BOOST_TEST(logs.out == file_text(home.path() / "runs" / waiter / "output.log"));
  BOOST_TEST(logs.out.find(" execution_complete {") != std::string::npos, logs.out);

  // logs -f on a running run prints as it trains and ends when the run does.
  auto again = run_cdui(home, {"run", endless, "--detach", "--name", "again"});
  auto running = run_id_in(again.out);
  auto tail = start_cdui(home, {"logs", "-f", "again"});
  BOOST_REQUIRE_MESSAGE(tail->wait_for_output(" progress {", 120s), tail->out() << tail->err());
  BOOST_TEST(!tail->exited());
  srv.cancel(running);
  code = tail->wait_for(60s);
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 0, tail->err());
  BOOST_TEST(tail->out().find(" execution_stopped {") != std::string::npos, tail->out());
  srv.wait_final(running);
  BOOST_TEST(tail->out() == file_text(home.path() / "runs" / running / "output.log"));

  // A name two runs have, or a prefix several ids share, is refused with the matches listed.
  auto twin1 = run_id_in(run_cdui(home, {"run", endless, "--detach", "--name", "twin"}).out);
  auto twin2 = run_id_in(run_cdui(home, {"run", endless, "--detach", "--name", "twin"}).out);
  auto ambiguous = run_cdui(home, {"show", "twin"});
  BOOST_TEST(ambiguous.code == 2);
  BOOST_TEST(ambiguous.err.find("'twin' is the name of 2 runs: ") != std::string::npos, ambiguous.err);
  BOOST_TEST(ambiguous.err.find(twin1) != std::string::npos, ambiguous.err);
  BOOST_TEST(ambiguous.err.find(twin2) != std::string::npos, ambiguous.err);
  auto unknown = run_cdui(home, {"logs", "nosuchrun"});
  BOOST_TEST(unknown.code == 2);
  BOOST_TEST(unknown.err == "cdui: no run has the id or name 'nosuchrun' (`cdui runs` lists them)\n");

  // cancel takes several runs; one it cannot find does not stop the others.
  auto both = run_cdui(home, {"cancel", twin1, "nosuchrun", twin2});
  BOOST_TEST(both.code == 2, both.err);
  BOOST_TEST(both.err.find("'nosuchrun'") != std::string::npos, both.err);
  for (const auto& id : {twin1, twin2})
    BOOST_TEST(srv.wait_final(id)["status"] == "cancelled", id);

  // runs --json for scripts, --wide with whole names and the times.
  auto listed = run_cdui(home, {"runs", "--json"});
  BOOST_TEST(listed.code == 0, listed.err);
  auto page = json::parse(listed.out);
  BOOST_TEST(page["total"] == 5);
  BOOST_TEST(page["runs"][0]["run_id"] == twin2);
  BOOST_TEST(page["runs"][4]["name"] == "blocker");
  auto wide = run_cdui(home, {"runs", "--wide"});
  BOOST_TEST(wide.code == 0, wide.err);
  BOOST_TEST(wide.out.find("STARTED") != std::string::npos, wide.out);
}

BOOST_AUTO_TEST_CASE(without_a_server_show_logs_and_follow_read_the_store) {
  cdui::test::temp_home home;
  auto graph = write_graph(home, "alone", moons_graph_json(1, 2));
  auto r = run_cdui(home, {"run", graph, "--seed", "4", "--set", "loop.max_steps=3"});
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  auto id = run_id_in(r.out.substr(r.out.find('\n') + 1));
  BOOST_TEST(node_params(json::parse(file_text(home.path() / "runs" / id / "graph.json")), "loop")["max_steps"] == 3);

  auto shown = run_cdui(home, {"show", id.substr(0, 4)});
  BOOST_TEST(shown.code == 0, shown.err);
  BOOST_TEST(shown.out.find("status:   succeeded") != std::string::npos, shown.out);
  BOOST_TEST(shown.out.find("final metrics:") != std::string::npos, shown.out);
  auto logs = run_cdui(home, {"logs", "-f", "alone"});
  BOOST_TEST(logs.code == 0, logs.err);
  BOOST_TEST(logs.out == file_text(home.path() / "runs" / id / "output.log"));
  auto followed = run_cdui(home, {"follow", id});
  BOOST_TEST(followed.code == 0, followed.err);
  BOOST_TEST(followed.out.find("run " + id + " succeeded in") != std::string::npos, followed.out);
  auto json_runs = run_cdui(home, {"runs", "--json"});
  BOOST_TEST(json::parse(json_runs.out)["runs"][0]["run_id"] == id);

  cdui::test::temp_home empty;
  auto none = run_cdui(empty, {"show", "x"});
  BOOST_TEST(none.code == 2);
  BOOST_TEST(none.err.find("no runs on " + empty.path().string() + " yet") != std::string::npos, none.err);
}

BOOST_AUTO_TEST_CASE(a_command_line_cdui_cannot_take_is_told_in_the_clis_words) {
  cdui::test::temp_home home;
  auto graph = write_graph(home, "g", moons_graph_json(1, 1));
  auto check = [&](std::vector<std::string> args, const std::string& want) {
    auto r = run_cdui(home, args);
    BOOST_TEST(r.code == 2, args.front() << ": " << r.err);
    BOOST_TEST(r.err.find(want) != std::string::npos, "want " << want << " in\n" << r.err);
    BOOST_TEST(r.out.empty(), r.out);
  };
  check({"xyz"}, "cdui: unknown command 'xyz'; see cdui --help\n");
  check({"runs", "--bogus"}, "cdui: unknown argument '--bogus' for cdui runs; see cdui runs --help\n");
  check({"run"}, "; see cdui run --help\n");
  check({"run", "nonexist.json"}, "cdui: cannot read nonexist.json: no such file\n");
  check({"run", home.path().string()}, "it is a folder, not a file");
  check({"run", graph, "--set", "nope.x=1"},
        "cdui: --set 'nope.x': the graph has no node 'nope' (its nodes: data, loader, model, loss, opt, loop)\n");
  check({"run", graph, "--set", "loader.batchsize=3"}, "unknown param 'batchsize'");
  check({"run", graph, "--set", "loader.batch_size"}, "--set 'loader.batch_size': no '='");
  check({"run", graph, "--set", "loader.batch_size=0"}, "batch_size");
  check({"run", graph, "--memory", "lots"}, "cdui: --memory: 'lots' is not a size");
  check({"run", graph, "--memory", "64M", "--memory-gib", "1"}, "--memory");
  check({"estimate", "nonexist.json"}, "cdui: cannot read nonexist.json: no such file\n");
}

BOOST_AUTO_TEST_SUITE_END()
