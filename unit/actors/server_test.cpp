// The embedded runtime end to end: the facade, the run queue, device slots and run actors, with real
// training on generated data.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "actors/policy/run_options.hpp"
#include "actors/server/server.hpp"
#include "testkit/embedded.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"

using namespace std::chrono_literals;

namespace {

using cdui::test::server_config;

using cdui::test::moons_graph_json;

using cdui::test::request;

cdui::run_status status_of(cdui::server& srv, const std::string& id) {
  auto info = srv.info(id);
  BOOST_REQUIRE(info.has_value());
  return info->status;
}

/// Waits until the run has the status, or fails the test after 30 s.
void await_status(cdui::server& srv, const std::string& id, cdui::run_status want) {
  BOOST_REQUIRE_MESSAGE(cdui::test::reaches(srv, id, want), "run " << id << " never reached " << to_string(want));
}

std::vector<std::string> event_types(cdui::server& srv, const std::string& id) {
  std::vector<std::string> types;
  std::uint64_t cursor = 0;
  for (;;) {
    auto batch = srv.events(id, cursor).value();
    for (const auto& e : batch.events) {
      types.push_back(e.type);
      cursor = e.cursor;
    }
    if (batch.events.empty())
      return types;
  }
}

/// The data of the run's last event.
nlohmann::json last_event_data(cdui::server& srv, const std::string& id) {
  auto count = event_types(srv, id).size();
  return nlohmann::json::parse(srv.events(id, count - 1).value().events.back().data);
}

} // namespace

BOOST_AUTO_TEST_SUITE(server_test)

BOOST_AUTO_TEST_CASE(a_run_trains_to_success_and_its_folder_holds_graph_events_and_log) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto submitted = srv.submit(request(moons_graph_json(2), "moons"));
  BOOST_REQUIRE_MESSAGE(submitted.ok(), submitted.error);
  auto done = srv.wait(submitted.run_id);
  BOOST_TEST(to_string(done.status) == "succeeded");
  BOOST_TEST(done.name == "moons");
  BOOST_TEST(done.queue_key == "cpu");
  BOOST_TEST(done.started_ms >= done.created_ms);
  BOOST_TEST(done.finished_ms >= done.started_ms);
  auto metrics = nlohmann::json::parse(done.final_metrics);
  BOOST_TEST(metrics["loop"]["total_epochs_run"] == 2);
  BOOST_TEST(metrics["loop"]["total_steps"] == 32);  // 512 / 32 batches, two epochs

  auto types = event_types(srv, submitted.run_id);
  BOOST_REQUIRE(!types.empty());
  BOOST_TEST(types.front() == "execution_start");
  BOOST_TEST(types.back() == "execution_complete");

  auto dir = home.path() / "runs" / submitted.run_id;
  BOOST_TEST(std::filesystem::exists(dir / "graph.json"));
  BOOST_TEST(std::filesystem::exists(dir / "checkpoints"));
  BOOST_TEST(std::filesystem::file_size(dir / "output.log") > 0u);
  std::ifstream events{dir / "events.jsonl"};
  std::string line;
  std::size_t lines = 0;
  while (std::getline(events, line)) {
    auto e = nlohmann::json::parse(line);
    BOOST_TEST(e["cursor"] == lines + 1);
    ++lines;
  }
  BOOST_TEST(lines == types.size());
}

BOOST_AUTO_TEST_CASE(the_cpu_slot_runs_two_at_a_time_and_starts_the_rest_in_submit_order) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    auto s = srv.submit(request(moons_graph_json(1'000'000)));
    BOOST_REQUIRE_MESSAGE(s.ok(), s.error);
    ids.push_back(s.run_id);
  }
  await_status(srv, ids[0], cdui::run_status::running);
  await_status(srv, ids[1], cdui::run_status::running);
  // The queue decided at each submit, in its handler: what it answers now is that decision.
  BOOST_TEST(to_string(status_of(srv, ids[2])) == "queued");
  BOOST_TEST(to_string(status_of(srv, ids[3])) == "queued");

  // One ends: the oldest waiting run (the third), not the fourth, takes its place.
  BOOST_TEST(srv.cancel(ids[1]));
  BOOST_TEST(to_string(srv.wait(ids[1]).status) == "cancelled");
  await_status(srv, ids[2], cdui::run_status::running);
  // Decided when the cancelled run ended, before the queue answered anything after it.
  BOOST_TEST(to_string(status_of(srv, ids[3])) == "queued");
  BOOST_TEST(srv.info(ids[2])->started_ms >= srv.info(ids[0])->started_ms);

  for (const auto& id : ids)
    srv.cancel(id);
  for (const auto& id : ids)
    BOOST_TEST(to_string(srv.wait(id).status) == "cancelled");
}

BOOST_AUTO_TEST_CASE(a_queued_run_cancelled_never_starts) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(srv.submit(request(moons_graph_json(1'000'000))).run_id);
  await_status(srv, ids[0], cdui::run_status::running);
  await_status(srv, ids[1], cdui::run_status::running);
  BOOST_TEST(srv.cancel(ids[2]));
  auto info = srv.wait(ids[2]);
  BOOST_TEST(to_string(info.status) == "cancelled");
  BOOST_TEST(info.started_ms == 0);
  auto types = event_types(srv, ids[2]);
  BOOST_TEST((types == std::vector<std::string>{"execution_stopped"}));
  auto stopped = last_event_data(srv, ids[2]);
  BOOST_TEST(stopped["reason"] == "cancelled");
  BOOST_TEST(stopped["message"] == "cancelled before it started");
  BOOST_TEST(!srv.cancel(ids[2]));  // already ended
  // Its folder is made when a run starts: one that never started has none.
  BOOST_TEST(!std::filesystem::exists(home.path() / "runs" / ids[2]));
  BOOST_TEST(std::filesystem::is_directory(home.path() / "runs" / ids[0]));
  srv.cancel(ids[0]);
  srv.cancel(ids[1]);
}

BOOST_AUTO_TEST_CASE(a_running_run_cancelled_stops_between_batches) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto id = srv.submit(request(moons_graph_json(1'000'000))).run_id;
  await_status(srv, id, cdui::run_status::running);
  // Wait for training to be under way (a progress event) before stopping it.
  std::uint64_t cursor = 0;
  bool training = false;
  while (!training) {
    auto batch = srv.events(id, cursor, 1000ms).value();
    for (const auto& e : batch.events) {
      training = training || e.type == "progress";
      cursor = e.cursor;
    }
  }
  BOOST_TEST(srv.cancel(id));
  auto info = srv.wait(id);
  BOOST_TEST(to_string(info.status) == "cancelled");
  auto types = event_types(srv, id);
  BOOST_TEST(types.back() == "execution_stopped");
  auto stopped = last_event_data(srv, id);
  BOOST_TEST(stopped["reason"] == "cancelled");
  BOOST_TEST(stopped["message"] == "cancelled while it was running");
  BOOST_TEST(stopped.contains("metrics"));
}

BOOST_AUTO_TEST_CASE(events_long_poll_returns_when_events_arrive_or_the_wait_ends) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto id = srv.submit(request(moons_graph_json(1, 4))).run_id;
  auto done = srv.wait(id);
  BOOST_TEST(to_string(done.status) == "succeeded");
  auto all = srv.events(id, 0).value();
  BOOST_TEST(all.finished);
  auto last = all.events.back().cursor;
  // After the end there is nothing more: the answer comes at once, finished, without waiting.
  auto start = std::chrono::steady_clock::now();
  auto none = srv.events(id, last, 5000ms).value();
  BOOST_TEST(none.events.empty());
  BOOST_TEST(none.finished);
  BOOST_TEST((std::chrono::steady_clock::now() - start < 4000ms));
  auto tail = srv.events(id, last - 1).value();
  BOOST_TEST(tail.events.size() == 1u);
  BOOST_TEST(tail.events.front().cursor == last);
}

BOOST_AUTO_TEST_CASE(refusals_name_what_was_wrong) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto invalid = srv.submit(request(std::string{R"({"nodes": [{"id": "x", "type": "Nope"}]})"}));
  BOOST_TEST(!invalid.ok());
  BOOST_TEST(invalid.error.find("node 'x'") != std::string::npos);
  BOOST_TEST(invalid.error.find("unknown node type 'Nope'") != std::string::npos);

  auto r = request(moons_graph_json(1));
  r.device = "gpu";
  auto bad_device = srv.submit(r);
  BOOST_TEST(!bad_device.ok());
  BOOST_TEST(bad_device.error.find("option 'device'") != std::string::npos);

  auto unknown = srv.info("nosuchid");
  BOOST_TEST(!unknown.has_value());
  BOOST_TEST((unknown.error().kind == cdui::error_kind::not_found));
  BOOST_TEST(unknown.error().message == "no run has the id 'nosuchid'");
  BOOST_CHECK_THROW(srv.wait("nosuchid"), cdui::api_failure);
  BOOST_TEST(srv.runs().empty());
}

BOOST_AUTO_TEST_CASE(cuda_on_a_machine_without_cuda_runs_on_the_cpu_with_a_warning) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto r = request(moons_graph_json(1, 2));
  r.device = "cuda:1";
  auto s = srv.submit(r);
  BOOST_REQUIRE(s.ok());
  auto info = srv.wait(s.run_id);
  BOOST_TEST(info.queue_key == "cpu");
  BOOST_TEST(to_string(info.status) == "succeeded");
  auto batch = srv.events(s.run_id, 0).value();
  bool warned = false;
  for (const auto& e : batch.events)
    if (e.type == "run_warning")
      warned = warned || nlohmann::json::parse(e.data)["kind"] == "device_fallback";
  BOOST_TEST(warned);
  // The warning came while it was queued, before its folder was made: the folder has it too.
  std::ifstream events{home.path() / "runs" / s.run_id / "events.jsonl"};
  std::string first;
  BOOST_REQUIRE(std::getline(events, first));
  BOOST_TEST(nlohmann::json::parse(first)["type"] == "run_warning");
  BOOST_TEST(nlohmann::json::parse(first)["cursor"] == 1);
}

BOOST_AUTO_TEST_CASE(submits_from_several_threads_at_once_are_each_recorded_before_their_answer) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x1GiB")};
  auto blocker = srv.submit(request(moons_graph_json(1'000'000, 0, 16, "sim:0"))).run_id;
  await_status(srv, blocker, cdui::run_status::running);
  constexpr int threads = 4;
  constexpr int each = 25;
  std::vector<std::vector<std::string>> ids(threads);
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < each; ++i) {
        auto answer = srv.submit(request(moons_graph_json(1, 3, 16, "sim:0")));
        if (answer.ok())
          ids[t].push_back(answer.run_id);
      }
    });
  for (auto& c : clients)
    c.join();
  std::set<std::string> distinct;
  for (const auto& mine : ids) {
    BOOST_TEST(mine.size() == std::size_t{each});
    distinct.insert(mine.begin(), mine.end());
  }
  BOOST_TEST(distinct.size() == std::size_t{threads * each});
  // Each answered run is in the store, queued, in its place, with no folder yet.
  auto queued = srv.runs("queued", 0, 0).value();
  BOOST_TEST(queued.total == std::size_t{threads * each});
  std::set<std::uint32_t> places;
  for (const auto& r : queued.runs) {
    BOOST_TEST(distinct.count(r.id) == 1u);
    places.insert(r.queue_position);
    BOOST_TEST(!std::filesystem::exists(home.path() / "runs" / r.id));
  }
  BOOST_TEST(places.size() == std::size_t{threads * each});
  // A thread's runs queue in the order it submitted them.
  for (const auto& mine : ids)
    for (std::size_t i = 1; i < mine.size(); ++i)
      BOOST_TEST(srv.info(mine[i])->queue_position > srv.info(mine[i - 1])->queue_position);
  srv.cancel(blocker);  // the embedded server's shutdown cancels the rest
}

BOOST_AUTO_TEST_CASE(a_run_over_a_sim_cards_memory_fails_with_the_oom_text_and_the_next_run_fits) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x256KiB")};
  // 2-8192-2 holds ~160 KiB of weights, as much again of gradients, twice that of Adam state.
  auto big = srv.submit(request(moons_graph_json(1, 4, 8192, "sim:0")));
  auto small = srv.submit(request(moons_graph_json(1, 4, 16, "sim:0")));
  BOOST_REQUIRE(big.ok() && small.ok());
  auto failed = srv.wait(big.run_id);
  BOOST_TEST(failed.queue_key == "sim:0");
  BOOST_TEST(to_string(failed.status) == "failed");
  const auto& e = failed.error;
  BOOST_TEST(e.find("Node TrainingLoop (loop) ran out of memory on sim:0.") == 0u, e);
  BOOST_TEST(e.find("What to try, cheapest first:\n  - reduce batch_size on the DataLoader node")
             != std::string::npos, e);
  BOOST_TEST(e.find("256.0 KiB on the card") != std::string::npos, e);
  BOOST_TEST(e.find("Original error: sim:0 out of memory") != std::string::npos, e);

  auto fitted = srv.wait(small.run_id);
  BOOST_TEST(to_string(fitted.status) == "succeeded", fitted.error);
  auto peak = nlohmann::json::parse(fitted.final_metrics)["loop"]["peak_memory_bytes"]["sim:0"];
  BOOST_TEST(peak.get<std::int64_t>() > 0);
  BOOST_TEST(peak.get<std::int64_t>() <= 256 * 1024);
}

BOOST_AUTO_TEST_CASE(a_run_held_to_its_memory_budget_outgrows_it_alone_and_the_text_says_where_it_came_from) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x1GiB")};
  auto held = [](const nlohmann::json& graph, std::int64_t budget, const std::string& source) {
    auto r = request(graph);
    r.memory_bytes = budget;
    r.memory_source = source;
    return r;
  };
  // The card has room; the budget does not (see the test above for the model's sizes).
  auto big = srv.submit(held(moons_graph_json(1, 4, 8192, "sim:0"), 256 * 1024, ""));
  auto estimated = srv.submit(held(moons_graph_json(1, 4, 8192, "sim:0"), 256 * 1024, "estimate"));
  auto small = srv.submit(held(moons_graph_json(1, 4, 16, "sim:0"), 256 * 1024, ""));
  BOOST_REQUIRE(big.ok() && estimated.ok() && small.ok());
  auto failed = srv.wait(big.run_id);
  BOOST_TEST(to_string(failed.status) == "failed");
  BOOST_TEST(failed.error.find("Node TrainingLoop (loop) ran out of memory on sim:0.\n\nThe run is held to "
                               "its memory budget of 256.0 KiB per card (typed: target.memory_gib), "
                               "and it needs more: ask for a larger target.memory_gib") == 0u,
             failed.error);
  BOOST_TEST(failed.error.find("1.00 GiB on the card") != std::string::npos, failed.error);
  auto from_estimate = srv.wait(estimated.run_id);
  BOOST_TEST(from_estimate.error.find("256.0 KiB per card (the static estimate)") != std::string::npos,
             from_estimate.error);
  auto fitted = srv.wait(small.run_id);
  BOOST_TEST(to_string(fitted.status) == "succeeded", fitted.error);
  auto peak = nlohmann::json::parse(fitted.final_metrics)["loop"]["peak_memory_bytes"]["sim:0"];
  BOOST_TEST(peak.get<std::int64_t>() <= 256 * 1024);
}

BOOST_AUTO_TEST_CASE(five_runs_on_one_sim_card_wait_at_positions_one_to_four_and_start_in_order) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x1GiB")};
  std::vector<std::string> ids;
  ids.push_back(srv.submit(request(moons_graph_json(1'000'000, 0, 16, "sim:0"))).run_id);
  for (int i = 0; i < 4; ++i)
    ids.push_back(srv.submit(request(moons_graph_json(1, 3, 16, "sim:0"))).run_id);
  await_status(srv, ids[0], cdui::run_status::running);
  for (std::size_t i = 1; i < ids.size(); ++i) {
    auto info = srv.info(ids[i]);
    BOOST_TEST(info->queue_key == "sim:0");
    BOOST_TEST(to_string(info->status) == "queued");
    BOOST_TEST(info->queue_position == i);
  }
  auto listed = srv.runs("queued", 0, 0).value();
  BOOST_TEST(listed.total == 4u);
  BOOST_TEST(listed.runs.at(0).queue_position == 4u);  // newest first
  srv.cancel(ids[0]);
  std::vector<cdui::run_info> done;
  for (const auto& id : ids)
    done.push_back(srv.wait(id));
  BOOST_TEST(to_string(done[0].status) == "cancelled");
  for (std::size_t i = 1; i < done.size(); ++i) {
    BOOST_TEST(to_string(done[i].status) == "succeeded", done[i].error);
    BOOST_TEST(done[i].started_ms >= done[i - 1].finished_ms);  // never two at once
  }
  auto page = srv.runs("", 2, 1).value();
  BOOST_TEST(page.total == 5u);
  BOOST_REQUIRE(page.runs.size() == 2u);
  BOOST_TEST(page.runs[0].id == ids[3]);  // newest first
  auto bad_status = srv.runs("finished", 0, 0);
  BOOST_TEST(!bad_status.has_value());
  BOOST_TEST((bad_status.error().kind == cdui::error_kind::refused));
}

BOOST_AUTO_TEST_CASE(a_device_set_run_holds_both_cards_and_is_not_starved) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "2x1GiB")};
  auto first = srv.submit(request(moons_graph_json(1'000'000, 0, 16, "sim:0"))).run_id;
  await_status(srv, first, cdui::run_status::running);
  auto r = request(moons_graph_json(1, 2));
  r.devices = {"sim:1", "sim:0"};
  auto set = srv.submit(r);
  BOOST_REQUIRE_MESSAGE(set.ok(), set.error);
  std::vector<std::string> singles;
  for (int i = 0; i < 3; ++i)
    singles.push_back(srv.submit(request(moons_graph_json(1, 2, 16, "sim:1"))).run_id);
  // Each was judged at its submit, in the queue's handler: what the queue answers now is that.
  // sim:1 is free, yet nothing starts on it: the set run waits at its front and reserves it.
  BOOST_TEST(to_string(status_of(srv, set.run_id)) == "queued");
  BOOST_TEST(srv.info(set.run_id)->queue_position == 1u);
  for (const auto& id : singles)
    BOOST_TEST(to_string(status_of(srv, id)) == "queued");
  // Each says why: the set, which card it waits for; the runs behind it, that it reserves sim:1.
  BOOST_TEST(srv.info(set.run_id)->waiting_reason
             == "reserves sim:1 until sim:0 is free: position 1 there, behind run " + first + " (running)");
  BOOST_TEST(srv.info(singles[0])->waiting_reason
             == "position 2 in the queue of sim:1, reserved by run " + set.run_id
                  + " (a device set) until sim:0 is free");
  BOOST_TEST(srv.info(singles[2])->waiting_reason
             == "position 4 in the queue of sim:1, reserved by run " + set.run_id
                  + " (a device set) until sim:0 is free");
  srv.cancel(first);
  auto set_done = srv.wait(set.run_id);
  BOOST_TEST(to_string(set_done.status) == "succeeded", set_done.error);
  BOOST_TEST(set_done.queue_key == "sim:1");
  for (const auto& id : singles) {
    auto info = srv.wait(id);
    BOOST_TEST(info.started_ms >= set_done.finished_ms);
  }
  auto events = srv.events(set.run_id, 0).value();
  BOOST_TEST(nlohmann::json::parse(events.events.front().data)["device"] == "sim:1");

  auto lacking = request(moons_graph_json(1, 2));
  lacking.devices = {"sim:0", "sim:5"};
  auto refused = srv.submit(lacking);
  BOOST_TEST(refused.error.find("this server does not offer sim:5 (it offers cpu, sim:0, sim:1)")
               != std::string::npos, refused.error);
}

BOOST_AUTO_TEST_CASE(a_queued_run_says_its_place_and_the_run_ahead_of_it) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x1GiB")};
  auto endless = [&] { return srv.submit(request(moons_graph_json(1'000'000, 0, 16, "sim:0"))).run_id; };
  auto first = endless();
  await_status(srv, first, cdui::run_status::running);
  auto second = endless();
  auto third = endless();
  auto fourth = endless();
  BOOST_TEST(srv.info(second)->waiting_reason
             == "position 1 in the queue of sim:0, behind run " + first + " (running)");
  BOOST_TEST(srv.info(third)->waiting_reason
             == "position 2 in the queue of sim:0, behind run " + second + " (waiting)");
  BOOST_TEST(srv.info(fourth)->waiting_reason
             == "position 3 in the queue of sim:0, behind run " + second + " (waiting) and 1 more");
  // A run for any sim card: the server's only one is taken, and it never jumps a queue.
  auto for_any = request(moons_graph_json(1, 2, 16, "sim:0"));
  for_any.worker = cdui::policy::any_worker;
  for_any.device = "sim";
  auto any = srv.submit(for_any).run_id;
  BOOST_TEST(srv.info(any)->waiting_reason == "waits for a free sim slot: every one is busy");
  // The list says the same as each run.
  auto listed = srv.runs("queued", 0, 0).value();
  BOOST_TEST(listed.total == 4u);
  for (const auto& info : listed.runs)
    BOOST_TEST(info.waiting_reason == srv.info(info.id)->waiting_reason);
  // Once it runs, it has no reason.
  BOOST_TEST(srv.cancel(first));
  await_status(srv, second, cdui::run_status::running);
  BOOST_TEST(srv.info(second)->waiting_reason.empty());
  BOOST_TEST(srv.info(third)->waiting_reason
             == "position 1 in the queue of sim:0, behind run " + second + " (running)");
  for (const auto& id : {any, fourth, third, second})
    BOOST_TEST(srv.cancel(id));
  for (const auto& id : {any, fourth, third, second})
    BOOST_TEST(to_string(srv.wait(id).status) == "cancelled");
}

BOOST_AUTO_TEST_CASE(a_limit_override_from_the_environment_admits_two_on_a_card) {
  cdui::test::temp_home home;
  ::setenv("CODEFYUI_RUN_QUEUE_MAX_CONCURRENT", "sim:0=2,bad", 1);
  cdui::server srv{server_config(home.path(), "1x1GiB")};
  ::unsetenv("CODEFYUI_RUN_QUEUE_MAX_CONCURRENT");
  auto a = srv.submit(request(moons_graph_json(1'000'000, 0, 16, "sim:0"))).run_id;
  auto b = srv.submit(request(moons_graph_json(1'000'000, 0, 16, "sim:0"))).run_id;
  await_status(srv, a, cdui::run_status::running);
  await_status(srv, b, cdui::run_status::running);
  srv.cancel(a);
  srv.cancel(b);
}

BOOST_AUTO_TEST_CASE(the_interactive_lane_starts_at_once_and_refuses_over_its_limit) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x1GiB")};
  auto queued = srv.submit(request(moons_graph_json(1'000'000, 0, 16, "sim:0"))).run_id;
  await_status(srv, queued, cdui::run_status::running);
  std::vector<std::string> lane;
  for (auto session : {"tab-1", "tab-2"}) {
    auto r = request(moons_graph_json(1'000'000, 0, 16, "sim:0"));
    r.lane = cdui::run_lane::interactive;
    r.session = session;
    auto s = srv.submit(r);
    BOOST_REQUIRE_MESSAGE(s.ok(), s.error);
    lane.push_back(s.run_id);
  }
  // Both start beside the queued run although sim:0 admits one: they skip the queue.
  for (const auto& id : lane)
    await_status(srv, id, cdui::run_status::running);
  auto third = request(moons_graph_json(1));
  third.lane = cdui::run_lane::interactive;
  auto refused = srv.submit(third);
  BOOST_TEST(refused.unavailable);
  BOOST_TEST(refused.error.find("interactive lane is full") != std::string::npos, refused.error);
  srv.cancel(lane[0]);
  srv.wait(lane[0]);
  auto same_tab = request(moons_graph_json(1));
  same_tab.lane = cdui::run_lane::interactive;
  same_tab.session = "tab-2";
  auto again = srv.submit(same_tab);
  BOOST_TEST(again.error.find("editor session 'tab-2' already has an interactive run")
               != std::string::npos, again.error);
  srv.cancel(lane[1]);
  srv.cancel(queued);
}

BOOST_AUTO_TEST_CASE(a_restart_queues_waiting_runs_again_in_order_and_interrupts_running_ones) {
  cdui::test::temp_home home;
  std::string running;
  std::vector<std::string> waiting;
  {
    cdui::server srv{server_config(home.path(), "1x1GiB", true)};
    running = srv.submit(request(moons_graph_json(1'000'000, 0, 16, "sim:0"))).run_id;
    for (int i = 0; i < 3; ++i)
      waiting.push_back(srv.submit(request(moons_graph_json(1, 2, 16, "sim:0"))).run_id);
    await_status(srv, running, cdui::run_status::running);
    srv.shutdown();
    BOOST_TEST(to_string(srv.info(running)->status) == "interrupted");
    BOOST_TEST(to_string(srv.info(waiting[0])->status) == "queued");
    BOOST_TEST(srv.submit(request(moons_graph_json(1))).unavailable);
  }
  cdui::server srv{server_config(home.path(), "1x1GiB", true)};
  auto stopped = event_types(srv, running);
  BOOST_TEST(stopped.back() == "execution_stopped");
  auto stop = last_event_data(srv, running);
  BOOST_TEST(stop["reason"] == "interrupted");
  BOOST_TEST(stop["message"] == "the server stopped");
  std::vector<cdui::run_info> done;
  for (const auto& id : waiting)
    done.push_back(srv.wait(id));
  for (std::size_t i = 0; i < done.size(); ++i) {
    BOOST_TEST(to_string(done[i].status) == "succeeded", done[i].error);
    if (i > 0)
      BOOST_TEST(done[i].started_ms >= done[i - 1].finished_ms);
  }
  BOOST_TEST(to_string(srv.info(running)->status) == "interrupted");
}

BOOST_AUTO_TEST_CASE(a_run_a_restart_cannot_queue_again_fails_saying_why_and_its_log_ends_stopped) {
  cdui::test::temp_home home;
  std::string orphan;
  {
    cdui::server srv{server_config(home.path(), "2x1GiB", true)};
    auto blocker = srv.submit(request(moons_graph_json(1'000'000, 0, 16, "sim:1"))).run_id;
    auto r = request(moons_graph_json(1, 2, 16, std::nullopt));
    r.devices = {"sim:1"};
    orphan = srv.submit(r).run_id;
    await_status(srv, blocker, cdui::run_status::running);
    srv.shutdown();
    BOOST_TEST(to_string(srv.info(orphan)->status) == "queued");
  }
  // The card it was queued for is gone after the restart.
  cdui::server srv{server_config(home.path(), "1x1GiB", true)};
  auto info = srv.info(orphan);
  BOOST_REQUIRE(info);
  BOOST_TEST(to_string(info->status) == "failed");
  BOOST_TEST(info->error.rfind("could not be queued again after a restart: option 'target.devices': "
                               "this server does not offer sim:1", 0) == 0u, info->error);
  auto events = srv.events(orphan, 0).value().events;
  BOOST_REQUIRE(!events.empty());
  BOOST_TEST(events.back().type == "execution_stopped");
  auto stopped = nlohmann::json::parse(events.back().data);
  BOOST_TEST(stopped["reason"] == "not_placed");
  BOOST_TEST(stopped["message"] == info->error);
}

BOOST_AUTO_TEST_CASE(metrics_erase_and_status_report_what_the_store_holds) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto long_run = srv.submit(request(moons_graph_json(1'000'000))).run_id;
  auto id = srv.submit(request(moons_graph_json(2))).run_id;
  srv.wait(id);
  auto loss = srv.metrics(id, "train_loss");
  BOOST_REQUIRE(loss.has_value());
  BOOST_TEST(loss->size() == 2u);  // one per epoch
  BOOST_TEST(loss->at(0).node == "loop");
  BOOST_TEST((srv.metrics("nosuchid").error().kind == cdui::error_kind::not_found));

  auto queue = srv.status().queue;
  BOOST_TEST(queue.runs == 1u);
  BOOST_REQUIRE(queue.children.size() == 1u);  // the long run's actor
  BOOST_TEST(queue.children[0].id == long_run);
  BOOST_TEST((queue.children[0].status == cdui::run_status::running));
  // Without the run actors' (GET /api/workers, /api/devices, /metrics): the same slots, no child.
  auto slots_only = srv.queue(false);
  BOOST_TEST(slots_only.runs == 1u);
  BOOST_TEST(slots_only.children.empty());
  BOOST_TEST(slots_only.queues.size() == queue.queues.size());

  BOOST_TEST((*srv.erase(long_run) == cdui::erase_result::active));
  BOOST_TEST((*srv.erase(id) == cdui::erase_result::erased));
  BOOST_TEST((*srv.erase(id) == cdui::erase_result::unknown));
  BOOST_TEST(!std::filesystem::exists(home.path() / "runs" / id));
  srv.cancel(long_run);
}

BOOST_AUTO_TEST_CASE(a_bad_sim_spec_is_refused_naming_the_entry) {
  cdui::test::temp_home home;
  try {
    cdui::server srv{server_config(home.path(), "2x8GiB,huge")};
    BOOST_FAIL("the server should have refused the spec");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string{e.what()}.find("'huge'") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
