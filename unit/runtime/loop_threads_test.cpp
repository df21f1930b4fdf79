// The intra-op threads a TrainingLoop trains with when its num_threads is 0: the run's, but one for
// a model whose batch is too small to share among threads (runtime/nodes/loop_setup.hpp).

#include <boost/test/unit_test.hpp>

#include "runtime/nodes/loop_setup.hpp"
#include "testkit/home.hpp"
#include "unit/runtime/run_helpers.hpp"

using namespace cdui;

namespace {

/// The num_threads the loop's node_config reports when the run offers two.
std::int64_t loop_threads(const nlohmann::json& graph, const std::filesystem::path& dir) {
  test::run_options options;
  options.num_threads = 2;
  auto run = test::run_graph(graph, dir, options);
  test::require_succeeded(run);
  return run.config("loop")["num_threads"].get<std::int64_t>();
}

} // namespace

BOOST_AUTO_TEST_SUITE(loop_threads_test)

BOOST_AUTO_TEST_CASE(the_default_is_one_thread_below_the_work_that_pays_for_more) {
  BOOST_TEST(runtime::nodes::default_loop_threads(8, 37'000) == 1);
  BOOST_TEST(runtime::nodes::default_loop_threads(8, runtime::nodes::threaded_batch_macs - 1) == 1);
  BOOST_TEST(runtime::nodes::default_loop_threads(8, runtime::nodes::threaded_batch_macs) == 8);
}

BOOST_AUTO_TEST_CASE(a_small_model_trains_on_one_thread_a_large_one_on_the_runs) {
  test::temp_home home;
  // Moons into 2-16-2 in batches of 32: about 1,000 multiply-adds a batch.
  BOOST_TEST(loop_threads(test::moons_graph_json(1, 2), home.path() / "moons") == 1);

  // The same graph with num_threads given keeps it.
  auto given = test::moons_graph_json(1, 2);
  test::params(given, "loop")["num_threads"] = 2;
  BOOST_TEST(loop_threads(given, home.path() / "given") == 2);

  // A CNN of 32 and 64 channels in batches of 64: about 250 million a batch.
  test::sized_graph cnn;
  cnn.cnn = true;
  cnn.width = 32;
  cnn.batch = 64;
  cnn.samples = 128;
  cnn.max_steps = 1;
  auto graph = test::sized_graph_json(cnn);
  test::params(graph, "loop").erase("num_threads");
  BOOST_TEST(loop_threads(graph, home.path() / "cnn") == 2);
}

BOOST_AUTO_TEST_SUITE_END()
