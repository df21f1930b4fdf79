#include <boost/test/unit_test.hpp>

#include "actors/policy/placement.hpp"
#include "actors/policy/run_options.hpp"

using namespace cdui;
using namespace cdui::policy;

namespace {

/// This server: a CPU and two 8 GiB sim cards, the second the card "card-B".
local_devices host() {
  local_devices local;
  local.devices = {{"cpu", "CPU", 2, false, 0, ""},
                   {"sim:0", "sim 0", 1, true, 8LL << 30, "card-A"},
                   {"sim:1", "sim 1", 1, true, 8LL << 30, "card-B"}};
  local.counts.sim_count = 2;
  local.counts.sim_total_bytes = {8LL << 30, 8LL << 30};
  return local;
}

known_workers workers() {
  known_workers w;
  w["gpu-box"] = {{"cpu", "sim:0", "sim:1"}, {"", "card-X", "card-Y"}, true, false};
  w["shot"] = {{"cpu", "sim:0"}, {"", "card-Z"}, true, true};
  return w;
}

run_request request(const std::string& worker = "", const std::string& device = "",
                    std::vector<std::string> devices = {}) {
  run_request r;
  r.worker = worker;
  r.device = device;
  r.devices = std::move(devices);
  return r;
}

placement placed(const run_request& r, const device_hint& hint = {}, const known_workers& w = workers(),
                 bool resuming = false) {
  auto p = place(r, hint, host(), w, resuming);
  BOOST_REQUIRE_MESSAGE(std::holds_alternative<placement>(p),
                        "refused: " + (std::holds_alternative<std::string>(p) ? std::get<std::string>(p) : ""));
  return std::get<placement>(p);
}

std::string refusal(const run_request& r, const device_hint& hint = {},
                    const known_workers& w = workers()) {
  auto p = place(r, hint, host(), w, false);
  BOOST_REQUIRE(std::holds_alternative<std::string>(p));
  return std::get<std::string>(p);
}

std::vector<std::string> keys(const placement& p) {
  std::vector<std::string> out;
  for (const auto& k : p.keys)
    out.push_back(k.str());
  return out;
}

using names = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_SUITE(placement_test)

BOOST_AUTO_TEST_CASE(a_local_run_goes_to_its_option_else_a_nodes_device_else_the_cpu) {
  auto p = placed(request());
  BOOST_TEST((keys(p) == names{"cpu"}));
  BOOST_TEST(p.run_device.empty());
  BOOST_TEST(p.queue_key() == "cpu");

  p = placed(request("", "sim:1"));
  BOOST_TEST((keys(p) == names{"sim:1"}));
  BOOST_TEST(p.run_device == "sim:1");
  BOOST_TEST(!p.fallback_warning);

  // A node's device picks the queue, but the run's context leaves the choice to the node.
  p = placed(request(), {"sim:1", "node 'loop' (TrainingLoop), param 'device'"});
  BOOST_TEST((keys(p) == names{"sim:1"}));
  BOOST_TEST(p.run_device.empty());
}

BOOST_AUTO_TEST_CASE(a_device_the_host_lacks_falls_back_with_a_warning_and_a_bad_one_is_refused) {
  auto p = placed(request("", "cuda:0"));
  BOOST_TEST((keys(p) == names{"cpu"}));
  BOOST_REQUIRE(p.fallback_warning);
  BOOST_TEST(p.fallback_warning->find("cuda") != std::string::npos);
  // sim:7 does not exist: the kind's current card, never the CPU.
  p = placed(request("", "sim:7"));
  BOOST_TEST((keys(p) == names{"sim:0"}));
  BOOST_TEST(bool(p.fallback_warning));

  auto why = refusal(request("", "tpu:0"));
  BOOST_TEST(why.rfind("option 'device': ", 0) == 0u, why);
  why = refusal(request(), {"gpu", "node 'loop' (TrainingLoop), param 'device'"});
  BOOST_TEST(why.rfind("node 'loop' (TrainingLoop), param 'device': ", 0) == 0u, why);
}

BOOST_AUTO_TEST_CASE(a_device_set_takes_exactly_the_devices_the_server_offers) {
  auto p = placed(request("", "", {"sim:1", "sim:0"}));
  BOOST_TEST((keys(p) == names{"sim:1", "sim:0"}));
  BOOST_TEST(p.run_device == "sim:1");
  // No fallback inside a set: a device it does not offer is a refusal naming what it offers.
  auto why = refusal(request("", "", {"sim:0", "sim:5"}));
  BOOST_TEST(why == "option 'target.devices': this server does not offer sim:5 (it offers cpu, "
                    "sim:0, sim:1)");
  why = refusal(request("", "", {"cuda:0"}));
  BOOST_TEST(why.find("does not offer cuda:0") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_worker_run_takes_the_workers_first_accelerator_or_what_it_names) {
  auto p = placed(request("gpu-box"));
  BOOST_TEST((keys(p) == names{"gpu-box/sim:0"}));
  BOOST_TEST(!p.keys.front().local());
  BOOST_TEST(p.run_device.empty());  // renumbered inside the run
  BOOST_TEST(p.queue_key() == "gpu-box/sim:0");

  BOOST_TEST((keys(placed(request("gpu-box", "sim:1"))) == names{"gpu-box/sim:1"}));
  BOOST_TEST((keys(placed(request("gpu-box", "", {"sim:1", "sim:0"})))
              == names{"gpu-box/sim:1", "gpu-box/sim:0"}));
  // A node's device says which kind: the worker's first card of that kind.
  BOOST_TEST((keys(placed(request("gpu-box"), {"cpu", "node 'n' (T), param 'device'"}))
              == names{"gpu-box/cpu"}));
  // A worker with no accelerator: its CPU.
  known_workers cpu_only{{"small", {{"cpu"}, {""}, true, false}}};
  BOOST_TEST((keys(placed(request("small"), {}, cpu_only)) == names{"small/cpu"}));
}

BOOST_AUTO_TEST_CASE(a_worker_run_without_devices_takes_the_first_free_card_of_its_kind) {
  admission slots;
  for (const auto& d : {"gpu-box/cpu", "gpu-box/sim:0", "gpu-box/sim:1"})
    slots.set_limit(d, 1);
  auto on = [&](const run_request& r, const device_hint& hint = {}) {
    auto p = place(r, hint, host(), workers(), false, &slots);
    BOOST_REQUIRE(std::holds_alternative<placement>(p));
    return keys(std::get<placement>(p));
  };
  BOOST_TEST((on(request("gpu-box")) == names{"gpu-box/sim:0"}));
  slots.enqueue("busy", {"gpu-box/sim:0"});
  BOOST_TEST((slots.admit() == names{"busy"}));
  // sim:0 is busy, sim:1 idle: the run goes to sim:1 instead of waiting behind "busy".
  BOOST_TEST((on(request("gpu-box")) == names{"gpu-box/sim:1"}));
  BOOST_TEST((on(request("gpu-box"), {"sim:0", "node 'n' (T), param 'device'"}) == names{"gpu-box/sim:1"}));
  // Both busy: the first card of its kind, where it waits its turn.
  slots.enqueue("busy2", {"gpu-box/sim:1"});
  BOOST_TEST((slots.admit() == names{"busy2"}));
  BOOST_TEST((on(request("gpu-box")) == names{"gpu-box/sim:0"}));
  // What the run names is what it gets, busy or not.
  BOOST_TEST((on(request("gpu-box", "sim:1")) == names{"gpu-box/sim:1"}));
}

BOOST_AUTO_TEST_CASE(a_fallback_to_the_cpu_names_a_connected_worker_that_offers_the_kind) {
  auto p = placed(request("", "sim"), {}, workers());  // this server has sim cards: no fallback
  BOOST_TEST(!p.fallback_warning);
  known_workers cuda{{"gpu-box", {{"cpu", "cuda:0"}, {"", "GPU-1"}, true, false}}};
  p = placed(request("", "cuda"), {}, cuda);
  BOOST_TEST((keys(p) == names{"cpu"}));
  BOOST_REQUIRE(p.fallback_warning);
  BOOST_TEST(p.fallback_warning->find("runs on cpu.") != std::string::npos, *p.fallback_warning);
  BOOST_TEST(p.fallback_warning->find("Worker 'gpu-box' offers cuda: submit with --target gpu-box")
               != std::string::npos,
             *p.fallback_warning);
  // A worker that is away, or offers no cuda, is not named.
  cuda["gpu-box"].open = false;
  p = placed(request("", "cuda"), {}, cuda);
  BOOST_TEST(p.fallback_warning->find("Worker") == std::string::npos, *p.fallback_warning);
  p = placed(request("", "cuda"), {}, workers());
  BOOST_TEST(p.fallback_warning->find("Worker") == std::string::npos, *p.fallback_warning);
}

BOOST_AUTO_TEST_CASE(a_worker_run_is_refused_naming_the_worker_and_what_it_offers) {
  auto why = refusal(request("nobody"));
  BOOST_TEST(why == "option 'target.worker': no worker named 'nobody' has connected to this server "
                    "since it started (known: gpu-box, shot)");
  BOOST_TEST(refusal(request("nobody"), {}, {}).find("(none has)") != std::string::npos);
  why = refusal(request("gpu-box", "sim:4"));
  BOOST_TEST(why == "option 'device': worker 'gpu-box' does not offer sim:4 (it offers cpu, sim:0, "
                    "sim:1)");
  why = refusal(request("gpu-box"), {"cuda", "node 'n' (T), param 'device'"});
  BOOST_TEST(why == "node 'n' (T), param 'device': worker 'gpu-box' offers no cuda device (it "
                    "offers cpu, sim:0, sim:1)");
  auto keeps = request("shot");
  keeps.record_outputs = true;
  BOOST_TEST(refusal(keeps).rfind("option 'record_outputs': worker 'shot' is a one-shot worker", 0)
             == 0u);
}

BOOST_AUTO_TEST_CASE(after_a_restart_a_worker_run_keeps_its_devices_before_the_worker_is_back) {
  auto p = placed(request("gone", "", {"cuda:1"}), {}, {}, true);
  BOOST_TEST((keys(p) == names{"gone/cuda:1"}));
  // Without devices there is nothing to wait for: still refused.
  BOOST_TEST(std::holds_alternative<std::string>(place(request("gone"), {}, host(), {}, true)));
}

BOOST_AUTO_TEST_CASE(any_worker_and_the_pool_float_until_a_slot_of_their_kind_is_free) {
  auto p = placed(request(any_worker));
  BOOST_REQUIRE(p.floating);
  BOOST_TEST(p.keys.empty());
  BOOST_TEST(p.floating->kind.empty());
  BOOST_TEST(p.queue_key() == "any");
  p = placed(request(one_shot_pool, "cpu"));
  BOOST_REQUIRE(p.floating);
  BOOST_TEST(p.floating->pool);
  BOOST_TEST(p.floating->kind == "cpu");
  BOOST_TEST(p.queue_key() == "one-shot");

  auto why = refusal(request(any_worker, "cuda"));
  BOOST_TEST(why == "option 'target.worker' \"any\": neither this server nor a worker that has "
                    "connected since it started offers a cuda device");
  known_workers no_shots{{"gpu-box", workers().at("gpu-box")}};
  why = refusal(request(one_shot_pool), {}, no_shots);
  BOOST_TEST(why == "option 'target.pool': no one-shot worker offering an accelerator has connected "
                    "to this server since it started");
  // Before any worker is back after a restart, nothing is refused.
  BOOST_TEST(bool(placed(request(one_shot_pool, "cuda"), {}, {}, true).floating));
}

BOOST_AUTO_TEST_CASE(a_floating_run_takes_the_first_idle_slot_of_its_kind_workers_first) {
  // The slots as the queue sets them up: every device of this server and of each worker.
  admission slots;
  auto w = workers();
  for (const auto& d : host().devices)
    slots.set_limit(d.name, d.slot_limit);
  for (const auto& [name, worker] : w)
    for (const auto& d : worker.devices)
      slots.set_limit(slot_key{name, d}.str(), d == "cpu" ? 2 : 1);
  // A device nothing has set up is not offered.
  BOOST_TEST(!free_slots({"", false, false, {}}, false, {{"new", {{"sim:0"}, {""}, true, false}}}, {}, slots).by_count);
  floating_run any{"", false, false, {}};
  auto slot = free_slots(any, false, w, host(), slots).by_count;
  BOOST_REQUIRE(slot);
  BOOST_TEST(slot->str() == "gpu-box/sim:0");
  // Busy or closed slots are skipped; this server's cards come after every worker's.
  slots.enqueue("r1", {"gpu-box/sim:0"});
  BOOST_TEST((slots.admit() == std::vector<std::string>{"r1"}));
  BOOST_TEST(free_slots(any, false, w, host(), slots).by_count->str() == "gpu-box/sim:1");
  w["gpu-box"].open = false;
  BOOST_TEST(free_slots(any, false, w, host(), slots).by_count->str() == "shot/sim:0");
  floating_run keeps{"", false, true, {}};  // record_outputs: never a one-shot worker
  BOOST_TEST(free_slots(keeps, false, w, host(), slots).by_count->str() == "sim:0");
  floating_run pool{"sim", true, false, {}};
  BOOST_TEST(free_slots(pool, false, w, host(), slots).by_count->str() == "shot/sim:0");
  w["shot"].open = false;
  BOOST_TEST(!free_slots(pool, false, w, host(), slots).by_count);  // never this server
  floating_run cpu{"cpu", false, false, {}};
  BOOST_TEST(free_slots(cpu, false, w, host(), slots).by_count->str() == "cpu");
  // A run waiting in a slot's queue keeps floating runs off it: they never jump it.
  slots.enqueue("r2", {"cpu"});
  slots.enqueue("r3", {"cpu"});
  slots.enqueue("r4", {"cpu"});
  BOOST_TEST(slots.admit().size() == 2u);
  BOOST_TEST(!free_slots(cpu, false, w, host(), slots).by_count);
}

BOOST_AUTO_TEST_CASE(any_with_a_device_set_floats_for_a_worker_offering_the_whole_set) {
  // Such a run runs on a worker only (only a worker renumbers the set from :0), and is
  // refused with 400 only when no worker the server has seen offers the whole set.
  auto p = placed(request(any_worker, "", {"sim:1", "sim:0"}));
  BOOST_REQUIRE(p.floating);
  BOOST_TEST(p.floating->kind == "sim");
  BOOST_TEST(p.floating->devices == (names{"sim:1", "sim:0"}));
  BOOST_TEST(p.queue_key() == "any");
  BOOST_TEST(refusal(request(any_worker, "", {"sim:0", "sim:5"}))
             == "option 'target.devices': no worker that has connected to this server since it started "
                "offers the whole set sim:0, sim:5 (a run for any worker with a device set runs on a "
                "worker, which renumbers the set from sim:0; this server takes only a set of its sim:0)");
  BOOST_TEST(refusal(request(any_worker, "", {"sim:0", "cpu"}))
             == "option 'target.devices': a device set is of one kind; cpu is not sim");
  // This server's first card alone counts, with no worker at all; its second card does not.
  BOOST_TEST(bool(placed(request(any_worker, "", {"sim:0"}), {}, {}).floating));
  BOOST_TEST(refusal(request(any_worker, "", {"sim:1"}), {}, {}).find("offers the whole set sim:1")
             != std::string::npos);
  // Before any worker is back after a restart, nothing is refused.
  BOOST_TEST(bool(placed(request(any_worker, "", {"sim:0", "sim:5"}), {}, {}, true).floating));
  // The one-shot pool still takes one device.
  auto pool = request(one_shot_pool, "", {"sim:0"});
  BOOST_TEST(apply_options(nlohmann::json{{"target", {{"pool", "one-shot"}, {"devices", {"sim:0"}}}}}, pool)
             .find("the one-shot pool takes one device") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_floating_set_takes_the_first_worker_with_the_whole_set_idle) {
  admission slots;
  auto w = workers();
  w["lab"] = {{"cpu", "sim:0", "sim:1"}, {"", "card-P", "card-Q"}, true, false};
  for (const auto& d : host().devices)
    slots.set_limit(d.name, d.slot_limit);
  for (const auto& [name, worker] : w)
    for (const auto& d : worker.devices)
      slots.set_limit(slot_key{name, d}.str(), d == "cpu" ? 2 : 1);
  floating_run set{"sim", false, false, {"sim:1", "sim:0"}};
  auto free = free_slots(set, false, w, host(), slots);
  BOOST_TEST(!free.by_count);
  std::vector<std::string> taken;
  for (const auto& k : free.set)
    taken.push_back(k.str());
  BOOST_TEST(taken == (names{"gpu-box/sim:1", "gpu-box/sim:0"}));  // in the set's order
  // One card of gpu-box busy: the next worker with the whole set ("shot" lacks sim:1).
  slots.enqueue("r1", {"gpu-box/sim:0"});
  BOOST_TEST((slots.admit() == names{"r1"}));
  free = free_slots(set, false, w, host(), slots);
  BOOST_REQUIRE_EQUAL(free.set.size(), 2u);
  BOOST_TEST(free.set.front().str() == "lab/sim:1");
  BOOST_TEST(free.busy_others);
  // Every worker with the set busy or closed: it waits (this server takes only a set of sim:0).
  w["lab"].open = false;
  free = free_slots(set, false, w, host(), slots);
  BOOST_TEST(free.set.empty());
  floating_run first_card{"sim", false, false, {"sim:0"}};
  w["gpu-box"].open = false;
  w["shot"].open = false;
  auto local = free_slots(first_card, false, w, host(), slots);
  BOOST_REQUIRE_EQUAL(local.set.size(), 1u);
  BOOST_TEST(local.set.front().str() == "sim:0");
}

BOOST_AUTO_TEST_CASE(a_floating_run_with_a_budget_asks_for_the_idle_shared_cards_of_its_kind) {
  admission slots;
  auto w = workers();
  for (const auto& [name, worker] : w)
    for (const auto& d : worker.devices)
      slots.set_limit(slot_key{name, d}.str(), 1);
  for (const auto& d : host().devices)
    slots.set_limit(d.name, d.slot_limit);
  floating_run sim{"sim", false, false, {}};
  BOOST_TEST(candidate_slots(sim, w, host()).size() == 5u);  // two on gpu-box, one on shot, two here
  w["shot"].open = false;
  BOOST_TEST(candidate_slots(sim, w, host()).size() == 4u);
  BOOST_TEST(candidate_slots(sim, w, host(), false).size() == 5u);  // what it may use once shot is back
  // gpu-box's sim:0 and sim:1 shared by memory, this server's sim:0 by count.
  for (const auto* key : {"gpu-box/sim:0", "gpu-box/sim:1"}) {
    slots.set_gated(key, true);
    slots.set_limit(key, 64);
  }
  // Without a budget a run never goes to a shared card.
  auto none = free_slots(sim, false, w, host(), slots);
  BOOST_TEST(none.by_memory.empty());
  BOOST_TEST(none.by_count->str() == "sim:0");
  // With one, the shared cards are the ledger's to judge, in order; the first idle card by count too.
  auto budgeted = free_slots(sim, true, w, host(), slots);
  BOOST_TEST((budgeted.by_memory == std::vector<std::string>{"gpu-box/sim:0", "gpu-box/sim:1"}));
  BOOST_TEST(budgeted.by_count->str() == "sim:0");
  BOOST_TEST(!budgeted.busy_others);
  // A run waiting at a shared card's front keeps it off the list: it may get that card later.
  slots.enqueue("named", {"gpu-box/sim:1"});
  BOOST_TEST(slots.admit().empty());  // handed to the ledger, holds its place
  budgeted = free_slots(sim, true, w, host(), slots);
  BOOST_TEST((budgeted.by_memory == std::vector<std::string>{"gpu-box/sim:0"}));
  BOOST_TEST(budgeted.busy_others);
}

BOOST_AUTO_TEST_CASE(a_device_set_across_workers_takes_each_workers_cards_together) {
  // docs/ddp.md, "Across workers": a worker's ranks are consecutive, in the order the workers come.
  auto w = workers();
  w["w2"] = {{"cpu", "sim:0", "sim:1"}, {"", "card-A", "card-B"}, false, false};  // away: no refusal
  auto p = placed(request("", "", {"gpu-box/sim:0", "w2/sim:1", "gpu-box/sim:1", "w2/sim:0"}), {}, w);
  BOOST_TEST(keys(p) == (names{"gpu-box/sim:0", "gpu-box/sim:1", "w2/sim:1", "w2/sim:0"}));
  BOOST_TEST(p.queue_key() == "gpu-box/sim:0");
  BOOST_TEST(refusal(request("", "", {"gpu-box/sim:0", "nobody/sim:0"}), {}, w)
             == "option 'target.devices': no worker named 'nobody' has connected to this server since it started");
  BOOST_TEST(refusal(request("", "", {"gpu-box/sim:0", "w2/sim:7"}), {}, w)
             == "option 'target.devices': worker 'w2' does not offer sim:7 (it offers cpu, sim:0, sim:1)");
  BOOST_TEST(refusal(request("", "", {"gpu-box/sim:0", "sim:0"}), {}, w)
             == "option 'target.devices': sim:0 names no worker; a device set across workers names each card "
                "with its worker, as WORKER/DEVICE (w1/cuda:0)");
  auto outputs = request("", "", {"gpu-box/sim:0", "shot/sim:0"});
  outputs.record_outputs = true;
  BOOST_TEST(refusal(outputs, {}, w).rfind("option 'record_outputs': worker 'shot' is a one-shot worker", 0) == 0u);
  // A restart re-places it before its workers are back.
  BOOST_TEST(keys(placed(request("", "", {"a/sim:0", "b/sim:0"}), {}, {}, true)) == (names{"a/sim:0", "b/sim:0"}));
}

BOOST_AUTO_TEST_SUITE_END()
