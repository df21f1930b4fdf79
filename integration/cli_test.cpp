// The real `cdui` binary, started as a user starts it.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "testkit/graphs.hpp"
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

/// The sum of the bytes of an estimate's JSON terms.
std::int64_t sum_of_terms(const nlohmann::json& estimate) {
  std::int64_t sum = 0;
  for (const auto& t : estimate["terms"])
    sum += t["bytes"].get<std::int64_t>();
  return sum;
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
  for (std::string command : {"run", "validate", "estimate"}) {
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

BOOST_AUTO_TEST_CASE(cdui_answers_version_and_validate_without_libtorch_and_becomes_cdui_runtime_to_train) {
  // `cdui` links no libtorch (so --version, validate, estimate, runs and status answer at once);
  // the commands that train or serve exec cdui-runtime, found beside it or in ../libexec/cdui.
  auto needed = cdui::test::run_command({"/usr/bin/readelf", "-d", CDUI_BINARY}, {}, 30s);
  BOOST_TEST_REQUIRE(needed.code == 0, needed.err);
  BOOST_TEST(needed.out.find("libtorch") == std::string::npos, needed.out);
  BOOST_TEST(needed.out.find("libc10") == std::string::npos, needed.out);
  // A copy of cdui alone: what needs no libtorch works; a run says what is missing and where it looked.
  cdui::test::temp_home home;
  auto alone = home.path() / "bin" / "cdui";
  std::filesystem::create_directories(alone.parent_path());
  std::filesystem::copy_file(CDUI_BINARY, alone);
  std::filesystem::permissions(alone, std::filesystem::perms::owner_all);
  auto env = std::map<std::string, std::string>{{"CODEFYUI_HOME", home.path().string()}};
  auto version = cdui::test::run_command({alone.string(), "--version"}, env, 30s);
  BOOST_TEST(version.code == 0);
  BOOST_TEST(version.out.rfind("cdui ", 0) == 0u, version.out);
  auto examples = std::string{CDUI_SOURCE_DIR} + "/examples/";
  auto valid = cdui::test::run_command({alone.string(), "validate", examples + "moons_mlp.json"}, env, 30s);
  BOOST_TEST(valid.code == 0, valid.err);
  BOOST_TEST(valid.out.find("valid (") != std::string::npos, valid.out);
  auto run = cdui::test::run_command({alone.string(), "run", examples + "moons_mlp.json"}, env, 30s);
  BOOST_TEST(run.code == 1);
  BOOST_TEST(run.err.find("cannot start cdui-runtime") != std::string::npos, run.err);
  BOOST_TEST(run.err.find((home.path() / "bin" / "cdui-runtime").string()) != std::string::npos, run.err);
  BOOST_TEST(run.err.find((home.path() / "libexec" / "cdui" / "cdui-runtime").string()) != std::string::npos, run.err);
  // The cdui of the build trains through cdui-runtime, in the same process (execv keeps the pid).
  auto trained = run_cdui(home, {"run", examples + "moons_mlp.json", "--set", "loop.epochs=1"});
  BOOST_TEST(trained.code == 0, trained.err);
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

BOOST_AUTO_TEST_CASE(estimate_lists_terms_that_add_up) {
  cdui::test::temp_home home;
  auto r = run_cdui(home, {"estimate", examples + "fashion_mnist_mlp.json"});
  BOOST_TEST_MESSAGE(r.out);
  BOOST_REQUIRE(r.code == 0);
  // "  <term>  <bytes> B  <human>  <detail>": the terms' bytes add up to the total's.
  std::regex line{"\n  ([a-z_]+) +([0-9]+) B "};
  std::int64_t sum = 0, total = -1;
  for (std::sregex_iterator it{r.out.begin(), r.out.end(), line}, end; it != end; ++it) {
    auto bytes = std::stoll((*it)[2]);
    if ((*it)[1] == "total")
      total = bytes;
    else
      sum += bytes;
  }
  BOOST_TEST(total == sum);
  for (const auto* term : {"parameters", "gradients", "optimizer_state", "activations"})
    BOOST_TEST(r.out.find(std::string{"\n  "} + term + " ") != std::string::npos, term);
  BOOST_TEST(r.out.find("203,530 parameters x 4 bytes") != std::string::npos);

  // --json on a CUDA card of a device set: the CUDA terms, per card.
  r = run_cdui(home, {"estimate", examples + "fashion_mnist_mlp.json", "--device", "cuda:0",
                      "--cards", "2", "--json"});
  BOOST_REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  BOOST_TEST(j["total_bytes"].get<std::int64_t>() == sum_of_terms(j));
  BOOST_TEST(j["terms"].back()["name"] == "cuda_workspace");
  BOOST_TEST(j["cards"] == 2);
  BOOST_TEST(j["memory_source"] == "estimate");

  // A rough estimate: the reason, no figure, exit 1.
  auto csv = write_file(home, "rows.csv", "a,b,label\n1,2,0\n3,4,1\n");
  auto graph = write_file(home, "csv.json", nlohmann::json{
    {"nodes", {{{"id", "data"}, {"type", "Dataset"}, {"params", {{"name", "csv"}, {"path", csv}}}},
               {{"id", "loader"}, {"type", "DataLoader"}},
               {{"id", "model"}, {"type", "Model"}, {"params", {{"layers", {{{"type", "Linear"}, {"out_features", 2}}}}}}},
               {{"id", "loss"}, {"type", "Loss"}},
               {{"id", "opt"}, {"type", "Optimizer"}},
               {{"id", "loop"}, {"type", "TrainingLoop"}}}},
    {"edges", {{{"from", "data.dataset"}, {"to", "loader.dataset"}},
               {{"from", "data.dataset"}, {"to", "model.dataset"}},
               {{"from", "model.model"}, {"to", "loop.model"}},
               {{"from", "loader.dataloader"}, {"to", "loop.dataloader"}},
               {{"from", "loss.loss_fn"}, {"to", "loop.loss_fn"}},
               {{"from", "opt.optimizer"}, {"to", "loop.optimizer"}}}}}.dump());
  r = run_cdui(home, {"estimate", graph});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.out.find("Rough estimate, no figure: Dataset 'data' reads a CSV file") != std::string::npos, r.out);
  BOOST_TEST(run_cdui(home, {"estimate", graph, "--cards", "0"}).code == 2);
  BOOST_TEST(run_cdui(home, {"estimate", graph, "--device", "gpu"}).code == 2);
}

BOOST_AUTO_TEST_CASE(estimate_from_a_parameter_count_prints_the_seeds_figures) {
  cdui::test::temp_home home;
  // The table in docs/training-memory.md, "From a parameter count" (1B in bf16 with Adam: 11.18 GB;
  // 7B with LoRA at 0.2%: "13 GB plus 0.08 GB"), in the seeds' GB: 1024^3 bytes.
  auto r = run_cdui(home, {"estimate", "--parameters", "1B", "--precision", "bf16", "--optimizer", "adam"});
  BOOST_TEST_MESSAGE(r.out);
  BOOST_REQUIRE(r.code == 0);
  BOOST_TEST(r.out.find("\n  total ") != std::string::npos);
  BOOST_TEST(std::regex_search(r.out, std::regex{"\n  total +[0-9]+ B +11\\.18 GiB"}), r.out);
  for (const auto* term : {"parameters", "gradients", "optimizer_state"})
    BOOST_TEST(r.out.find(std::string{"\n  "} + term + " ") != std::string::npos, term);

  r = run_cdui(home, {"estimate", "--parameters", "7e9", "--precision", "fp16", "--optimizer", "adamw",
                      "--state-precision", "fp16", "--trainable", "0.002"});
  BOOST_REQUIRE(r.code == 0);
  BOOST_TEST(std::regex_search(r.out, std::regex{"\n  parameters +[0-9]+ B +13\\.[0-9]{2} GiB"}), r.out);
  BOOST_TEST(r.out.find("14,000,000 trainable parameters (0.2%)") != std::string::npos, r.out);

  r = run_cdui(home, {"estimate", "--parameters", "7e9", "--json"});
  BOOST_REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  BOOST_TEST(j["total_bytes"].get<std::int64_t>() == sum_of_terms(j));
  BOOST_TEST(std::llround(static_cast<double>(sum_of_terms(j)) / (1LL << 30)) == 104);  // 7B, fp32, AdamW

  // Bad input: exit 2, naming the flag and what it takes.
  struct refused {
    std::vector<std::string> args;
    std::string says;
  };
  for (const auto& [args, says] : std::vector<refused>{
         {{"--parameters", "-7e9"}, "--parameters must be at least 1"},
         {{"--parameters", "seven"}, "--parameters must be a number of parameters such as 7e9"},
         {{"--parameters", "7e9", "--trainable", "2"}, "--trainable must be the share of the "
                                                        "parameters trained, more than 0 and at most 1"},
         {{"--parameters", "7e9", "--precision", "fp8"}, "--precision must be one of fp32, bf16, fp16, got 'fp8'"},
         {{"--parameters", "7e9", "--optimizer", "lion"}, "--optimizer must be one of adam, adamw, sgd"},
         {{"--parameters", "7e9", "--device", "cuda:0"}, "--device applies to a graph's estimate"},
         {{"--precision", "bf16"}, "--parameters is required"},
         {{}, "give a graph file, or --parameters N"},
         {{examples + "moons_mlp.json", "--parameters", "7e9"}, "not both"}}) {
    std::vector<std::string> command{"estimate"};
    command.insert(command.end(), args.begin(), args.end());
    r = run_cdui(home, command);
    BOOST_TEST(r.code == 2);
    BOOST_TEST(r.err.find(says) != std::string::npos, r.err);
  }
}

BOOST_AUTO_TEST_CASE(post_api_estimate_answers_with_the_token_and_refuses_bad_graphs) {
  cdui::test::temp_home home;
  cdui::test::server_process server{home};
  auto files = cdui::test::read_server_files(home.path());
  BOOST_REQUIRE(files);
  httplib::Client client{"127.0.0.1", files->port};
  httplib::Headers token{{"X-CodefyUI-Token", cdui::test::token_of(home)}};
  std::ifstream in{examples + "fashion_mnist_cnn.json"};
  nlohmann::json body{{"graph", nlohmann::json::parse(in)}};

  auto res = client.Post("/api/estimate", body.dump(), "application/json");
  BOOST_REQUIRE(res);
  BOOST_TEST(res->status == 403);

  res = client.Post("/api/estimate", token, body.dump(), "application/json");
  BOOST_REQUIRE(res);
  BOOST_TEST(res->status == 200, res->body);
  auto j = nlohmann::json::parse(res->body);
  BOOST_TEST(j["total_bytes"].get<std::int64_t>() == sum_of_terms(j));
  BOOST_TEST(j["rough"].is_null());
  BOOST_TEST(j["memory_source"] == "estimate");

  // Nothing was queued: an estimate is never applied on its own.
  BOOST_TEST(server.get_json("/api/runs")["runs"].empty());

  body["graph"]["nodes"][2]["params"]["batch_size"] = 0;
  res = client.Post("/api/estimate", token, body.dump(), "application/json");
  BOOST_REQUIRE(res);
  BOOST_TEST(res->status == 400);
  auto refusal = nlohmann::json::parse(res->body);
  BOOST_TEST(refusal["errors"][0]["node"] == "train_loader");
  BOOST_TEST(refusal["errors"][0]["field"] == "batch_size");
  // A parameter count instead of a graph: 7B in bf16 with Adam, 78.23 GB (docs/training-memory.md).
  res = client.Post("/api/estimate", token, R"({"parameters": "7B", "precision": "bf16", "optimizer": "adam"})",
                    "application/json");
  BOOST_REQUIRE(res);
  BOOST_TEST(res->status == 200, res->body);
  j = nlohmann::json::parse(res->body);
  BOOST_TEST(std::llround(j["total_bytes"].get<double>() / (1LL << 30) * 100) == 7823);
  res = client.Post("/api/estimate", token, R"({"parameters": 7e9, "trainable": 0})", "application/json");
  BOOST_REQUIRE(res);
  BOOST_TEST(res->status == 400);
  BOOST_TEST(res->body.find("field 'trainable' must be") != std::string::npos, res->body);

  for (const auto* bad : {"[1]", "{}", "{\"graph\": 3}", "not json", "{\"graph\": {}, \"cards\": 0}",
                          "{\"graph\": {}, \"device\": \"gpu\"}", "{\"graph\": {}, \"x\": 1}",
                          "{\"parameters\": 7e9, \"device\": \"cuda\"}",
                          "{\"parameters\": 7e9, \"graph\": {}}", "{\"parameters\": -1}"}) {
    res = client.Post("/api/estimate", token, bad, "application/json");
    BOOST_REQUIRE(res);
    BOOST_TEST((res->status == 400 || res->status == 422), bad << " got " << res->status);
  }
}

BOOST_AUTO_TEST_CASE(devices_lists_the_cpu) {
  cdui::test::temp_home home;
  auto r = run_cdui(home, {"devices"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(r.out.find("cpu") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(fit_suggests_a_batch_that_trains_on_a_card_of_that_size) {
  // Issue 19: with Adam, a run's steps after its first hold the optimizer's state and the
  // gradients too; what fit found on one step did not train on the card it was fitted to.
  cdui::test::temp_home home;
  cdui::test::wide_moons o;
  o.optimizer = "adam";
  o.batch = 1024;
  auto graph = write_file(home, "wide.json", cdui::test::wide_moons_graph_json(o).dump());
  // A card between the peaks at batch 1 and at the graph's 1024, from an unbounded fit.
  auto roomy = run_cdui(home, {"fit", graph, "--memory", "1TiB"});
  BOOST_REQUIRE_MESSAGE(roomy.code == 0, roomy.out);
  std::smatch at_1, at_1024;
  BOOST_REQUIRE(std::regex_search(roomy.out, at_1, std::regex{"\n +1  ([0-9.]+) MiB\n"}));
  BOOST_REQUIRE(std::regex_search(roomy.out, at_1024, std::regex{"\n +1024  ([0-9.]+) MiB\n"}));
  auto card = std::to_string((std::stod(at_1[1]) + std::stod(at_1024[1])) / 2) + "MiB";

  auto r = run_cdui(home, {"fit", graph, "--memory", card});
  BOOST_TEST_MESSAGE(r.out);
  BOOST_REQUIRE(r.code == 0);
  std::smatch largest, suggested;
  BOOST_REQUIRE(
    std::regex_search(r.out, largest, std::regex{"largest batch_size that fits: ([0-9]+)"}));
  BOOST_REQUIRE(std::regex_search(r.out, suggested, std::regex{
    "suggestion: loader\\.batch_size ([0-9]+) with loop\\.accumulate_steps ([0-9]+) keeps the "
    "effective batch of 1024 \\(it trained with a peak of [0-9.]+ MiB\\)"}));
  BOOST_TEST(std::stoi(suggested[2]) > 1);
  // The recovery ladder on the same card: 1024 runs out of memory, then halves.
  auto ladder = run_cdui(home, {"fit", graph, "--memory", card, "--ladder"});
  BOOST_REQUIRE_MESSAGE(ladder.code == 0, ladder.out << ladder.err);
  BOOST_TEST(ladder.out.find("        1024                 1  out of memory\n") != std::string::npos, ladder.out);
  std::smatch rung;
  BOOST_REQUIRE(std::regex_search(ladder.out, rung, std::regex{
    "loader\\.batch_size ([0-9]+) with loop\\.accumulate_steps ([0-9]+) trains and keeps the effective "
    "batch of 1024"}));

  // The suggestion, the ladder's rung, and the largest batch with one batch per step, each trained
  // for three epochs on a card of that size, as a user runs them.
  o.epochs = 3;
  o.device = "sim:0";
  for (auto [batch, accumulate] : {std::pair{std::stoi(suggested[1]), std::stoi(suggested[2])},
                                   std::pair{std::stoi(rung[1]), std::stoi(rung[2])},
                                   std::pair{std::stoi(largest[1]), 1}}) {
    o.batch = batch;
    o.accumulate = accumulate;
    auto fitted = write_file(home, "fitted.json", cdui::test::wide_moons_graph_json(o).dump());
    auto run = run_cdui(home, {"run", fitted, "--sim-devices", "1x" + card, "--device", "sim:0",
                               "--seed", "1"});
    BOOST_TEST(run.code == 0, batch << " x " << accumulate << ":\n" << run.out << run.err);
    BOOST_TEST(printed_metric(run.out, "loop.total_steps") >= 3.0);
  }
}

BOOST_AUTO_TEST_SUITE_END()
