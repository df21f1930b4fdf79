#pragma once
// The memory ledger actor alone (actors/server/memory_ledger.*), for the tests of its protocol:
// memory_ledger_test, ledger_supervision_test.

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <caf/all.hpp>

#include "actors/server/memory_ledger.hpp"

namespace cdui::test {

/// The memory ledger actor alone, with a scoped actor standing in for its run queue.
struct ledger_fixture {
  ledger_fixture() {
    cfg.set("scheduler.max-threads", std::size_t{2});
    cfg.set("logger.verbosity", caf::atom("quiet"));
    self->send(ledger, cdui::atoms::attach::value, caf::actor_cast<cdui::actors::run_queue_actor>(queue));
  }
  ~ledger_fixture() { caf::anon_send_exit(ledger, caf::exit_reason::user_shutdown); }

  /// (share, key, card, name, ...): what the run queue sends when `key` turns Shared or back.
  bool share(const std::string& key, const std::string& card, bool shared,
             std::vector<std::string> holders = {}, std::vector<std::int64_t> budgets = {}) {
    auto at = key.find('/');
    auto name = key.substr(at + 1) + " on " + key.substr(0, at);
    bool changed = false;
    self->request(ledger, std::chrono::seconds(5), cdui::atoms::share::value,
                  cdui::card_share{key, card, name, 0, "", holders, budgets, shared})
      .receive([&](bool c) { changed = c; }, [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
    return changed;
  }

  /// A run for `key` alone, with target.wait true.
  cdui::memory_answer ask(const std::string& run, std::int64_t budget, const std::string& key) {
    cdui::memory_answer answer;
    self->request(ledger, std::chrono::seconds(5), cdui::atoms::ask::value,
                  cdui::memory_ask{run, budget, {key}, false, true, true})
      .receive([&](cdui::memory_answer& a) { answer = std::move(a); },
               [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
    return answer;
  }

  /// The slot of a shared key (invalid for another).
  cdui::actors::device_slot_actor slot(const std::string& key) {
    cdui::actors::device_slot_actor out;
    self->request(ledger, std::chrono::seconds(5), cdui::atoms::get::value, key)
      .receive([&](cdui::actors::device_slot_actor& s) { out = std::move(s); },
               [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
    return out;
  }

  cdui::memory_ledger_status status() {
    cdui::memory_ledger_status out;
    self->request(ledger, std::chrono::seconds(5), cdui::atoms::status::value)
      .receive([&](cdui::memory_ledger_status& s) { out = std::move(s); },
               [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
    return out;
  }

  /// The keys the ledger told the queue memory freed at, since the last call. Taken after a
  /// status(): a slot's memory_freed reaches the ledger before its status answer does.
  std::multiset<std::string> freed() {
    std::multiset<std::string> keys;
    for (bool more = true; more;)
      queue->receive([&](cdui::atoms::memory_freed, const std::string& key) { keys.insert(key); },
                     caf::after(std::chrono::milliseconds(0)) >> [&] { more = false; });
    return keys;
  }

  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  cdui::actors::memory_ledger_actor ledger =
    system.spawn(cdui::actors::memory_ledger, cdui::actors::memory_ledger_config{});
  caf::scoped_actor queue{system};
  caf::scoped_actor self{system};
};

} // namespace cdui::test
