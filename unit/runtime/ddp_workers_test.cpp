// DDP across workers (docs/ddp.md, "Across workers"; issue 34): the ranks of two workers' run
// folders meet at rank 0's c10d TCPStore on 127.0.0.1, its keys under the hash of the run's secret,
// and train the weights one process gets from the combined batches. Each folder is what an agent
// writes: run.json's ddp object names the store, the worker's first rank and every rank's card.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "messages/json_text.hpp"
#include "storage/home.hpp"
#include "testkit/home.hpp"
#include "testkit/wait.hpp"
#include "unit/runtime/ddp_ranks.hpp"

using cdui::test::temp_home;
using namespace cdui::test::ddp;
using nlohmann::json;

namespace {

/// The run `id`'s folder on worker `worker`, holding ranks `first`.. on its `cards`, of a run whose
/// ranks train on `devices`, meeting at 127.0.0.1:`port` (0: rank 0 picks one).
std::filesystem::path on_worker(const temp_home& home, const std::string& worker, const std::string& id,
                                const json& graph, const std::vector<std::string>& cards, int first,
                                const std::vector<std::string>& devices, int port = 0) {
  auto dir = prepare(home, worker + "-" + id, graph, cards);
  auto run = json::parse(cdui::test::file_text(dir / "run.json"));
  run["ddp"] = {{"store", {{"host", "127.0.0.1"}, {"port", port}}}, {"first_rank", first}, {"devices", devices}};
  cdui::storage::write_file_atomic(dir / "run.json", cdui::json_text(run));
  return dir;
}

/// Sets the store's port in the run.json of each of `dirs`, as an agent does once rank 0 said it.
void set_port(const std::vector<std::filesystem::path>& dirs, int port) {
  for (const auto& dir : dirs) {
    auto run = json::parse(cdui::test::file_text(dir / "run.json"));
    run["ddp"]["store"]["port"] = port;
    cdui::storage::write_file_atomic(dir / "run.json", cdui::json_text(run));
  }
}

/// The port rank 0 of the run in `dir` reported in its ddp_rendezvous event, once it has.
int reported_port(const std::filesystem::path& dir) {
  int port = 0;
  BOOST_REQUIRE(cdui::test::eventually([&] {
    std::ifstream in{dir / "events.jsonl"};
    for (std::string line; std::getline(in, line);) {
      auto e = json::parse(line, nullptr, false);
      if (e.is_object() && e["type"] == "ddp_rendezvous") {
        BOOST_TEST(e["data"]["host"] == "127.0.0.1");
        port = e["data"]["port"].get<int>();
      }
    }
    return port > 0;
  }, std::chrono::seconds(60)));
  return port;
}

} // namespace

BOOST_AUTO_TEST_SUITE(ddp_workers_test)

BOOST_AUTO_TEST_CASE(four_ranks_on_two_workers_train_the_weights_one_process_gets_from_the_combined_batches) {
  temp_home home;
  std::vector<std::string> devices{"w1/sim:0", "w1/sim:1", "w2/sim:0", "w2/sim:1"};
  auto graph = ddp_graph(8, 1, "ddp", true);
  auto w1 = on_worker(home, "w1", "run00001", graph, {"sim:0", "sim:1"}, 0, devices);
  auto w2 = on_worker(home, "w2", "run00001", graph, {"sim:0", "sim:1"}, 2, devices);
  auto one = prepare(home, "one00001", ddp_graph(32, 1, "single", true), {"sim:0"});
  const std::string secret = "run secret";
  // Rank 0 first: it hosts the store and says where; then the others, as the agents start them.
  std::vector<std::unique_ptr<cdui::test::process>> ranks;
  ranks.push_back(start_rank(w1, 0, 4, "60", secret));
  set_port({w1, w2}, reported_port(w1));
  ranks.push_back(start_rank(w1, 1, 4, "60", secret));
  ranks.push_back(start_rank(w2, 2, 4, "60", secret));
  ranks.push_back(start_rank(w2, 3, 4, "60", secret));
  wait_ranks(ranks);
  run_ranks(one, 1);
  auto ended = outcome(w1 / "outcome.json");
  BOOST_TEST_REQUIRE(ended["status"] == "succeeded", ended.dump());
  for (const auto& rank_end : {w1 / "outcome-rank1.json", w2 / "outcome-rank2.json", w2 / "outcome-rank3.json"})
    BOOST_TEST(outcome(rank_end)["status"] == "succeeded", rank_end);
  const auto& loop = ended["final_metrics"]["loop"];
  BOOST_TEST(loop["world_size"] == 4);
  BOOST_TEST(loop["backend"] == "gloo");
  BOOST_TEST(loop["effective_batch_size"] == 32);
  // Each worker's cards, by the names the run gives them.
  for (const auto& card : devices)
    BOOST_TEST(loop["peak_memory_bytes"][card].get<std::int64_t>() > 0, card);
  check_same_series(w1, one, "train_loss_batch", 20);
  check_same_saved_weights(w1, one);
}

BOOST_AUTO_TEST_CASE(a_rank_without_the_runs_secret_does_not_find_the_others) {
  temp_home home;
  std::vector<std::string> devices{"w1/sim:0", "w2/sim:0"};
  auto graph = ddp_graph(16, 1, "ddp", false);
  auto w1 = on_worker(home, "w1", "run00002", graph, {"sim:0"}, 0, devices);
  auto w2 = on_worker(home, "w2", "run00002", graph, {"sim:0"}, 1, devices);
  std::vector<std::unique_ptr<cdui::test::process>> ranks;
  ranks.push_back(start_rank(w1, 0, 2, "3", "the run's secret"));
  set_port({w2}, reported_port(w1));
  ranks.push_back(start_rank(w2, 1, 2, "3", "a guess"));
  wait_ranks(ranks);
  for (const auto& [file, rank] : {std::pair{w1 / "outcome.json", 0}, {w2 / "outcome-rank1.json", 1}}) {
    auto ended = outcome(file);
    BOOST_TEST(ended["status"] == "failed");
    auto expected = "DDP rank " + std::to_string(rank) + " of 2 could not join the other ranks: ";
    BOOST_TEST(ended["error"].get<std::string>().find(expected) != std::string::npos, ended.dump());
  }
}

BOOST_AUTO_TEST_CASE(a_rank_across_workers_needs_the_runs_secret) {
  temp_home home;
  auto w2 = on_worker(home, "w2", "run00003", ddp_graph(16, 1, "ddp", false), {"sim:0"}, 1, {"w1/sim:0", "w2/sim:0"}, 1);
  auto rank = start_rank(w2, 1, 2, "3");
  auto code = rank->wait_for(std::chrono::minutes(1));
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code != 0);
  BOOST_TEST(rank->err().find("a rank across workers meets the others only with the run's secret, and "
                              "CDUI_DDP_SECRET is not set") != std::string::npos, rank->err());
}

BOOST_AUTO_TEST_SUITE_END()
