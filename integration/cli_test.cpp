// The real `cdui` binary, started as a user starts it.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "testkit/server_process.hpp"

using namespace std::chrono_literals;

namespace {

using cdui::test::run_cdui;

const std::string examples = std::string{CDUI_SOURCE_DIR} + "/examples/";

/// The value of "node.metric = X" in the final metrics cdui prints.
double printed_metric(const std::string& out, const std::string& name) {
  std::smatch m;
  std::regex line{"  " + std::regex_replace(name, std::regex{"\\."}, "\\.") + " = ([0-9.eE+-]+)"};
  BOOST_REQUIRE_MESSAGE(std::regex_search(out, m, line), "no " << name << " in:\n" << out);
  return std::stod(m[1]);
}

std::string write_file(const cdui::test::temp_home& home, const std::string& name,
                       const std::string& text) {
  auto path = home.path() / name;
  std::ofstream{path} << text;
  return path.string();
}

} // namespace

BOOST_AUTO_TEST_SUITE(cli_test)

BOOST_AUTO_TEST_CASE(fashion_mnist_mlp_reaches_84_percent_test_accuracy_in_two_epochs) {
  cdui::test::temp_home home;
  auto r = run_cdui(home, {"run", examples + "fashion_mnist_mlp.json", "--seed", "1"});
  BOOST_TEST_MESSAGE(r.out);
  BOOST_TEST(r.code == 0);
  BOOST_TEST(r.out.find("succeeded") != std::string::npos);
  BOOST_TEST(printed_metric(r.out, "loop.total_epochs_run") == 2.0);
  BOOST_TEST(printed_metric(r.out, "evaluate.accuracy") >= 0.84);
  std::smatch id;
  BOOST_REQUIRE(std::regex_search(r.out, id, std::regex{"run ([0-9a-f]{8}) \\(fashion_mnist_mlp\\) queued on cpu"}));
  auto dir = home.path() / "runs" / id[1].str();
  BOOST_TEST(std::filesystem::exists(dir / "checkpoints" / "fashion_mnist_mlp.pt"));
  BOOST_TEST(std::filesystem::exists(dir / "events.jsonl"));
}

BOOST_AUTO_TEST_CASE(moons_mlp_reaches_95_percent) {
  cdui::test::temp_home home;
  auto r = run_cdui(home, {"run", examples + "moons_mlp.json", "--seed", "2", "--name", "moons"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(printed_metric(r.out, "evaluate.accuracy") >= 0.95);
}

BOOST_AUTO_TEST_CASE(an_invalid_graph_exits_2_naming_the_node) {
  cdui::test::temp_home home;
  auto graph = write_file(home, "bad.json", R"({"nodes": [
    {"id": "loop", "type": "TrainingLoop", "params": {"epochs": 0}}]})");
  for (std::string command : {"run", "validate"}) {
    auto r = run_cdui(home, {command, graph});
    BOOST_TEST(r.code == 2);
    BOOST_TEST(r.err.find("node 'loop' (TrainingLoop): param 'epochs' must be between 1 and")
               != std::string::npos, r.err);
    BOOST_TEST(r.err.find("required input 'model'") != std::string::npos, r.err);
  }
  auto malformed = write_file(home, "malformed.json", "{\n  \"nodes\": [\n    {\"id\": }\n]}");
  auto r = run_cdui(home, {"validate", malformed});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("line 3, column 12") != std::string::npos, r.err);
  auto runs = home.path() / "runs";
  BOOST_TEST((!std::filesystem::exists(runs) || std::filesystem::is_empty(runs)));
}

BOOST_AUTO_TEST_CASE(a_bad_command_line_exits_2) {
  cdui::test::temp_home home;
  BOOST_TEST(run_cdui(home, {"run"}).code == 2);
  BOOST_TEST(run_cdui(home, {"frobnicate"}).code == 2);
  BOOST_TEST(run_cdui(home, {"run", examples + "moons_mlp.json", "--seed", "-3"}).code == 2);
  BOOST_TEST(run_cdui(home, {"run", examples + "moons_mlp.json", "--device", "gpu"}).code == 2);
  BOOST_TEST(run_cdui(home, {"run", (home.path() / "missing.json").string()}).code == 2);
  auto version = run_cdui(home, {"--version"});
  BOOST_TEST(version.code == 0);
  BOOST_TEST(version.out.find("cdui ") == 0u);
}

BOOST_AUTO_TEST_CASE(ctrl_c_cancels_the_run_and_the_process_exits_130) {
  cdui::test::temp_home home;
  auto graph = examples + "moons_mlp.json";
  std::ifstream in{graph};
  auto g = nlohmann::json::parse(in);
  for (auto& node : g["nodes"])
    if (node["id"] == "loop")
      node["params"]["epochs"] = 1'000'000;
  auto long_graph = write_file(home, "long.json", g.dump());
  auto p = cdui::test::start_cdui(home, {"run", long_graph});
  BOOST_REQUIRE_MESSAGE(p->wait_for_output("val_accuracy", 120s), p->out() << p->err());
  p->signal(SIGINT);
  auto code = p->wait_for(60s);
  BOOST_REQUIRE_MESSAGE(code.has_value(), "cdui did not exit after Ctrl+C");
  BOOST_TEST(*code == 130);
  BOOST_TEST(p->out().find("cancelled") != std::string::npos, p->out());
  std::smatch id;
  auto out = p->out();
  BOOST_REQUIRE(std::regex_search(out, id, std::regex{"run ([0-9a-f]{8}) \\(long\\) queued"}));
  std::ifstream events{home.path() / "runs" / id[1].str() / "events.jsonl"};
  std::string line, last;
  while (std::getline(events, line))
    last = line;
  BOOST_TEST(nlohmann::json::parse(last)["type"] == "execution_stopped");
}

BOOST_AUTO_TEST_CASE(devices_lists_the_cpu) {
  cdui::test::temp_home home;
  auto r = run_cdui(home, {"devices"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(r.out.find("cpu") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
