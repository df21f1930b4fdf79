// DDP (docs/ddp.md; issue 13): two `cdui exec` ranks on two sim cards train one model with c10d
// (Gloo on loopback, the Reducer's bucketed all-reduce), and end with the weights one process gets
// from the combined batch.
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/engine.hpp"
#include "runtime/nodes/ddp.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"
#include "testkit/wait.hpp"
#include "unit/runtime/ddp_ranks.hpp"
#include "unit/runtime/run_helpers.hpp"
#include "unit/runtime/saved_weights.hpp"

using cdui::test::temp_home;
using nlohmann::json;

namespace {

using namespace cdui::test::ddp;

/// Two ranks at `batch` each, on `cards`, against one process at 2 x `batch`: the same weights.
void check_same_weights_as_one_process(int batch, int accumulate, bool shuffle,
                                       const std::vector<std::string>& cards = {"sim:0", "sim:1"}) {
  temp_home home;
  auto ddp = prepare(home, "ddp00001", ddp_graph(batch, accumulate, "ddp", shuffle), cards);
  auto one = prepare(home, "one00001", ddp_graph(2 * batch, accumulate, "single", shuffle), {"sim:0"});
  run_ranks(ddp, 2);
  run_ranks(one, 1);
  auto ended = outcome(ddp / "outcome.json");
  BOOST_TEST_REQUIRE(ended["status"] == "succeeded", ended.dump());
  BOOST_TEST(outcome(ddp / "outcome-rank1.json")["status"] == "succeeded");
  BOOST_TEST_REQUIRE(outcome(one / "outcome.json")["status"] == "succeeded");
  const auto& loop = ended["final_metrics"]["loop"];
  BOOST_TEST(loop["strategy"] == "ddp");
  BOOST_TEST(loop["world_size"] == 2);
  BOOST_TEST(loop["backend"] == "gloo");
  BOOST_TEST(loop["total_steps"] == 20);
  BOOST_TEST(loop["effective_batch_size"] == 2 * batch * accumulate);
  // Each card's peak, the most its rank used of it.
  for (const auto& card : cards)
    BOOST_TEST(loop["peak_memory_bytes"][card].get<std::int64_t>() > 0);
  // Only rank 0 saved the model; rank 1 ran the loop and what feeds it, and logged beside the run.
  BOOST_TEST(std::filesystem::exists(ddp / "output-rank1.log"));
  // The per-batch series, averaged over the ranks, are one process's on the combined batches:
  // One train_loss_batch for each of the 20 steps of `accumulate` batches; 512 samples in
  // validation batches of 2 x `batch`, each evaluation after an epoch of 512 / (2 x `batch`)
  // batches, the last one cut short.
  auto batches = 20 * accumulate;
  auto per_epoch = 512 / (2 * batch);
  check_same_series(ddp, one, "train_loss_batch", 20);
  check_same_series(ddp, one, "val_loss_step", static_cast<std::size_t>((batches + per_epoch - 1) / per_epoch * per_epoch));
  check_same_series(ddp, one, "val_loss", static_cast<std::size_t>((batches + per_epoch - 1) / per_epoch));
  check_same_saved_weights(ddp, one);
}

/// `g` (ddp_graph) with a second loop, `loop2`, of `strategy` on the same data, loss and optimizer:
/// `chained`, it trains loop's model further (and the saver saves its model), else a model of
/// its own (a separate branch).
json with_second_loop(json g, const std::string& strategy, bool chained) {
  g["nodes"].push_back({{"id", "loop2"},
                        {"type", "TrainingLoop"},
                        {"params", {{"strategy", strategy}, {"epochs", 1}, {"max_steps", 8}, {"train_loss_batch_every", 1}}}});
  g["edges"].push_back({{"from", "loader.dataloader"}, {"to", "loop2.dataloader"}});
  g["edges"].push_back({{"from", "loss.loss_fn"}, {"to", "loop2.loss_fn"}});
  g["edges"].push_back({{"from", "opt.optimizer"}, {"to", "loop2.optimizer"}});
  if (!chained) {
    g["edges"].push_back({{"from", "model.model"}, {"to", "loop2.model"}});
    return g;
  }
  g["edges"].push_back({{"from", "loop.model"}, {"to", "loop2.model"}});
  for (auto& edge : g["edges"])
    if (edge["to"] == "save.model")
      edge["from"] = "loop2.model";
  return g;
}

} // namespace

BOOST_AUTO_TEST_SUITE(ddp_test)

BOOST_AUTO_TEST_CASE(two_ranks_on_two_sim_cards_train_the_weights_one_process_gets_from_the_combined_batch) {
  check_same_weights_as_one_process(16, 1, false);
}

BOOST_AUTO_TEST_CASE(two_ranks_on_one_card_train_the_same_weights_over_gloo) {
  // A device set that names one card twice: both ranks on it (NCCL would refuse; Gloo does not).
  check_same_weights_as_one_process(16, 1, false, {"sim:0", "sim:0"});
}

BOOST_AUTO_TEST_CASE(with_accumulate_steps_2_and_shuffle_the_ranks_still_match_one_process) {
  check_same_weights_as_one_process(16, 2, true);
}

BOOST_AUTO_TEST_CASE(checkpointed_activations_train_two_ranks_to_the_same_weights_as_without) {
  // Blocks with something to drop (GELU's input, a dropout mask): the checkpointed blocks' weight
  // gradients come out of their reruns and still reach the Reducer's hooks.
  temp_home home;
  auto graph = [](bool checkpoint) {
    auto g = ddp_graph(16, 1, "ddp", true);
    auto& model = cdui::test::params(g, "model");
    model["layers"] = json::parse(R"([{"type": "Linear", "out_features": 256}, {"type": "GELU"},
      {"type": "Dropout", "p": 0.2}, {"type": "Linear", "out_features": 32}, {"type": "Tanh"},
      {"type": "Linear", "out_features": 2}])");
    model["checkpoint_activations"] = checkpoint;
    return g;
  };
  auto plain = prepare(home, "plain001", graph(false), {"sim:0", "sim:1"});
  auto checkpointed = prepare(home, "ckpt0001", graph(true), {"sim:0", "sim:1"});
  run_ranks(plain, 2);
  run_ranks(checkpointed, 2);
  auto plain_end = outcome(plain / "outcome.json");
  auto checkpointed_end = outcome(checkpointed / "outcome.json");
  BOOST_TEST_REQUIRE(plain_end["status"] == "succeeded", plain_end.dump());
  BOOST_TEST_REQUIRE(checkpointed_end["status"] == "succeeded", checkpointed_end.dump());
  for (const auto* card : {"sim:0", "sim:1"})
    BOOST_TEST(checkpointed_end["final_metrics"]["loop"]["activation_bytes"][card].get<std::int64_t>()
               < plain_end["final_metrics"]["loop"]["activation_bytes"][card].get<std::int64_t>());
  BOOST_TEST(cdui::test::same_weights(cdui::test::load_weights(plain / "checkpoints" / "model.pt"),
                                      cdui::test::load_weights(checkpointed / "checkpoints" / "model.pt")));
}

BOOST_AUTO_TEST_CASE(the_sampler_gives_every_sample_once_an_epoch_plus_padding_and_validation_each_once) {
  using cdui::runtime::nodes::ddp_training_part;
  using cdui::runtime::nodes::ddp_validation_part;
  // 10 samples in a shuffled order over 3 ranks: parts of 4, samples r, r + 3, ... of the order,
  // the 2 missing ones repeated from its start.
  auto order = torch::tensor({7, 2, 9, 0, 4, 1, 8, 3, 6, 5}, torch::kInt64);
  std::vector<std::vector<std::int64_t>> parts;
  for (int r = 0; r < 3; ++r) {
    auto p = ddp_training_part(order, r, 3);
    parts.emplace_back(p.data_ptr<std::int64_t>(), p.data_ptr<std::int64_t>() + p.numel());
  }
  BOOST_TEST(parts[0] == (std::vector<std::int64_t>{7, 0, 8, 5}));
  BOOST_TEST(parts[1] == (std::vector<std::int64_t>{2, 4, 3, 7}));
  BOOST_TEST(parts[2] == (std::vector<std::int64_t>{9, 1, 6, 2}));
  std::map<std::int64_t, int> seen;
  for (const auto& p : parts)
    for (auto i : p)
      ++seen[i];
  BOOST_TEST(seen.size() == 10u);  // every sample, the first two of the order twice
  BOOST_TEST(seen[7] == 2);
  BOOST_TEST(seen[2] == 2);
  // Validation: each of 10 samples in exactly one part, none repeated.
  std::vector<int> counted(10, 0);
  for (int r = 0; r < 3; ++r) {
    auto p = ddp_validation_part(10, r, 3);
    for (std::int64_t i = 0; i < p.numel(); ++i)
      ++counted[static_cast<std::size_t>(p[i].item<std::int64_t>())];
  }
  BOOST_TEST(counted == std::vector<int>(10, 1), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_ddp_loop_in_a_run_of_one_process_trains_single_and_says_so) {
  temp_home home;
  auto doc = cdui::test::moons_graph();
  cdui::test::params(doc, "loop")["strategy"] = "ddp";
  cdui::test::params(doc, "loop")["epochs"] = 1;
  auto run = cdui::test::run_graph(doc, home.path());
  cdui::test::require_succeeded(run);
  auto warnings = run.of_type("run_warning");
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(warnings[0]["kind"] == "ddp_not_available");
  BOOST_TEST(warnings[0]["message"] == "Node loop (TrainingLoop): strategy ddp trains across the cards of a run "
                                       "queued on a worker with a device set of two or more cards; this run "
                                       "executes in one process on cpu, so the loop trains there as with "
                                       "strategy single");
  BOOST_TEST(run.config("loop")["strategy"] == "single");
  BOOST_TEST(run.config("loop")["world_size"] == 1);
  BOOST_TEST(run.metrics["loop"]["strategy"] == "single");
}

BOOST_AUTO_TEST_CASE(a_rank_the_others_never_meet_fails_once_the_collective_timeout_passes) {
  temp_home home;
  auto dir = prepare(home, "alone001", ddp_graph(16, 1, "ddp", false), {"sim:0", "sim:1"});
  run_ranks(dir, 2, 1, "2");  // rank 1 never starts
  auto ended = outcome(dir / "outcome.json");
  BOOST_TEST(ended["status"] == "failed");
  BOOST_TEST(ended["error"].get<std::string>().find("DDP rank 0 of 2 could not join the other ranks: ")
             != std::string::npos, ended.dump());
}

BOOST_AUTO_TEST_CASE(a_rank_cancelled_while_it_waits_for_the_others_ends_cancelled_without_waiting_them_out) {
  // Rank 1 never comes (a part the server could not assign, say); the collectives would wait 10
  // minutes. A cancel ends rank 0 while it waits.
  temp_home home;
  auto dir = prepare(home, "wait0001", ddp_graph(16, 1, "ddp", false), {"sim:0", "sim:1"});
  auto rank0 = start_rank(dir, 0, 2, "600");
  BOOST_TEST_REQUIRE(cdui::test::eventually([&] {
    return cdui::test::file_text(dir / "events.jsonl").find(R"("status":"running","type":"TrainingLoop")")
           != std::string::npos;
  }, std::chrono::seconds(60)));
  rank0->signal(SIGTERM);
  auto code = rank0->wait_for(std::chrono::seconds(60));
  BOOST_TEST_REQUIRE(code.has_value(), "rank 0 went on waiting for rank 1");
  BOOST_TEST(outcome(dir / "outcome.json")["status"] == "cancelled");
}

BOOST_AUTO_TEST_CASE(two_ddp_loops_on_separate_branches_are_refused_and_one_after_the_other_is_not) {
  auto doc = with_second_loop(ddp_graph(16, 1, "ddp", false), "ddp", false);
  auto why = cdui::runtime::ddp_conflict(cdui::test::require_valid(doc));
  BOOST_REQUIRE(why);
  BOOST_TEST(*why == "TrainingLoops 'loop' and 'loop2' both train with strategy ddp on separate branches "
                     "of the graph; the ranks train one ddp loop at a time: feed one loop's model into "
                     "the other, or set one to strategy single");
  auto valid = cdui::test::require_valid(with_second_loop(ddp_graph(16, 1, "ddp", false), "ddp", true));
  BOOST_TEST(!cdui::runtime::ddp_conflict(valid));
  // A rank > 0 executes both loops and what feeds them, not the saver after them.
  auto part = cdui::runtime::ddp_rank_part(valid);
  BOOST_TEST(part.order.size() == valid.order.size() - 1);
}

BOOST_AUTO_TEST_CASE(two_ddp_loops_one_after_the_other_each_train_as_one_process_on_the_combined_batches) {
  // Each loop's ranks meet under a name of their own: the second loop's group must not read the
  // first's addresses (it hung or failed when they shared one).
  temp_home home;
  auto ddp = prepare(home, "ddp00002", with_second_loop(ddp_graph(16, 1, "ddp", false), "ddp", true), {"sim:0", "sim:1"});
  auto one = prepare(home, "one00002", with_second_loop(ddp_graph(32, 1, "single", false), "single", true), {"sim:0"});
  run_ranks(ddp, 2, -1, "20");  // a group that never forms fails in 20 s
  run_ranks(one, 1);
  auto ended = outcome(ddp / "outcome.json");
  BOOST_TEST_REQUIRE(ended["status"] == "succeeded", ended.dump());
  BOOST_TEST(outcome(ddp / "outcome-rank1.json")["status"] == "succeeded");
  BOOST_TEST_REQUIRE(outcome(one / "outcome.json")["status"] == "succeeded");
  BOOST_TEST(ended["final_metrics"]["loop2"]["world_size"] == 2);
  BOOST_TEST(ended["final_metrics"]["loop2"]["total_steps"] == 8);
  check_same_saved_weights(ddp, one);
}

BOOST_AUTO_TEST_SUITE_END()
