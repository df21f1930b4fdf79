// The run queue's part in sharing cards by memory (seed 001, "Sharing a card"): which of its keys
// are shared, the memory ledger it asks before a run starts on one, and the runs that wait for
// memory, with why.
#include <algorithm>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/policy/memory_budget.hpp"
#include "actors/policy/run_options.hpp"
#include "runtime/memory_key.hpp"
#include "messages/slot_key.hpp"
#include "actors/server/memory_ledger.hpp"
#include "actors/server/run_queue_parts.hpp"
#include "devices/device.hpp"
#include "messages/clock.hpp"

namespace cdui::actors::queue_parts {

namespace {

/// The card as sentences name it (seed 001: "cuda:1 on gpu-box").
std::string card_name(const std::string& key) {
  auto at = slot_key::parse(key);
  return at.device + " on " + (at.local() ? std::string{"this server"} : at.offerer);
}

/// What each run on the card holds besides its budget: a CUDA context on CUDA, else the sim allowance.
std::int64_t context_of(const run_queue_config& cfg, const std::string& key) {
  return devices::kind_of(slot_key::parse(key).device) == "cuda" ? cfg.cuda_context_bytes
                                                                 : cfg.sim_context_bytes;
}

/// The card behind the key (policy::card_id): the same for every offerer of one card (its UUID,
/// from this server's devices or the worker's latest offer), so the ledger keeps one ledger for it.
std::string card_of(const run_queue_state& st, const std::string& key) {
  auto at = slot_key::parse(key);
  std::string uuid;
  if (at.local()) {
    for (const auto& d : st.local.devices)
      if (d.name == at.device)
        uuid = d.uuid;
  } else if (auto w = st.workers.find(at.offerer); w != st.workers.end()) {
    auto d = std::find(w->second.devices.begin(), w->second.devices.end(), at.device);
    auto i = static_cast<std::size_t>(d - w->second.devices.begin());
    if (i < w->second.uuids.size())
      uuid = w->second.uuids[i];
  }
  return policy::card_id(at, uuid);
}

/// Puts the key under the ledger (many runs by count, each admitted by its budget) or back to
/// its limit by count. A run holding the card when it turns shared keeps it to itself.
void apply_share(self_ptr self, const std::string& key, bool shared) {
  auto& st = self->state;
  if (shared == st.slots.gated(key))
    return;
  std::vector<std::string> holders;
  for (const auto& slot : st.slots.slots())
    if (slot.key == key)
      holders = slot.running;
  if (shared) {
    st.exclusive_limits[key] = st.slots.limit(key);
    st.slots.set_limit(key, policy::shared_slot_limit);
    st.shared_keys.insert(key);
  } else {
    st.slots.set_limit(key, st.exclusive_limits[key]);
    st.exclusive_limits.erase(key);
    st.shared_keys.erase(key);
    for (auto i = st.waiting_reasons.begin(); i != st.waiting_reasons.end();) {
      auto waits_for = st.memory_keys.find(i->first);
      i = waits_for != st.memory_keys.end() && waits_for->second == key ? st.waiting_reasons.erase(i)
                                                                          : std::next(i);
    }
  }
  st.slots.set_gated(key, shared);
  // A run on the card already counts its budget (a worker run adopted after a restart); one
  // without keeps the card to itself.
  std::vector<std::int64_t> budgets;
  for (const auto& id : holders) {
    auto b = st.budgets.find(id);
    budgets.push_back(b == st.budgets.end() ? 0 : b->second.bytes);
  }
  caf::anon_send(st.ledger, atoms::share::value, key, card_of(st, key), card_name(key),
                 context_of(st.cfg, key), holders, budgets, shared);
  // A card other offerers offer too admits many runs only while every online one shares it: its
  // budget is the smallest limit among them (64 shared, else the limit by count).
  regroup(self, "");
}

} // namespace

void start_ledger(self_ptr self) {
  auto& st = self->state;
  st.ledger = self->spawn<caf::linked>(memory_ledger, memory_ledger_config{st.cfg.probe, st.cfg.probe_interval});
  self->send(st.ledger, atoms::attach::value, caf::actor_cast<run_queue_actor>(self));
  // This server's cards now; a worker's once it offers them (share_offered).
  for (const auto& card : st.cfg.store->shared_cards()) {
    if (!card.offerer.empty())
      st.shared_keys.insert(slot_key{card.offerer, card.device}.str());
    else if (policy::sharing_refusal(true, card.device).empty())
      apply_share(self, card.device, true);
  }
}

void share_offered(self_ptr self, const std::string& key, std::int64_t total, std::int64_t free) {
  auto& st = self->state;
  if (!st.shared_keys.count(key))
    return;
  apply_share(self, key, true);
  caf::anon_send(st.ledger, atoms::report::value, key, total, free);
}

std::string share_card(self_ptr self, const std::string& offerer, const std::string& device,
                       bool shared) {
  auto& st = self->state;
  if (!offerer.empty()) {
    auto w = st.workers.find(offerer);
    if (w == st.workers.end())
      return "no worker named '" + offerer + "' has connected to this server since it started";
    if (std::find(w->second.devices.begin(), w->second.devices.end(), device) == w->second.devices.end())
      return "no device '" + device + "' on worker '" + offerer + "' (see GET /api/workers)";
    if (auto why = policy::sharing_refusal(false, device); !why.empty())
      return why;
  } else {
    bool known = std::any_of(st.local.devices.begin(), st.local.devices.end(),
                             [&](const auto& d) { return d.name == device; });
    if (!known)
      return "this server has no device '" + device + "' (see GET /api/status for its devices)";
    if (auto why = policy::sharing_refusal(true, device); !why.empty())
      return why;
  }
  auto key = slot_key{offerer, device}.str();
  st.cfg.store->set_shared(offerer, device, shared, now_ms());
  spdlog::info("{} is {}", card_name(key), shared ? "shared by memory: runs there declare a budget"
                                                  : "exclusive: one run at a time by count");
  apply_share(self, key, shared);
  pump(self);
  return "";
}

std::string settle_budget(const run_queue_state& st, run_request& req, prepared_run& p) {
  bool on_shared = std::any_of(p.keys.begin(), p.keys.end(), [&](const auto& k) { return st.slots.gated(k); });
  if (!on_shared || req.lane == "interactive")
    return "";
  std::optional<policy::measured_peak> peak;
  // The graph as validated already (not its text parsed again).
  if (auto row = st.cfg.store->peak(runtime::memory_key(p.setup.graph->g), static_cast<int>(p.keys.size())))
    peak = policy::measured_peak{row->bytes, row->run_id};
  std::optional<std::int64_t> declared;
  if (req.memory_bytes > 0)
    declared = req.memory_bytes;
  auto source = req.memory_source == "estimate"   ? policy::budget_source::estimate
                : req.memory_source == "measured" ? policy::budget_source::measured
                                                  : policy::budget_source::typed;
  auto settled = policy::resolve_budget(declared, source, peak);
  if (auto* refusal = std::get_if<std::string>(&settled))
    return "option 'target.memory_gib': " + *refusal;
  const auto& b = std::get<policy::run_budget>(settled);
  // Kept in the run's options (and so on its object, in the store and on a worker): where the
  // budget came from travels with it.
  req.memory_bytes = b.bytes;
  req.memory_source = b.source == policy::budget_source::typed ? "" : std::string{to_string(b.source)};
  p.setup.context.memory_budget = b.bytes;
  p.setup.context.memory_budget_source = std::string{to_string(b.source)};
  if (!b.note.empty())
    p.warnings.emplace_back("memory_budget", "the run's memory budget is " + policy::gib_text(b.bytes)
                                               + " per card: " + b.note);
  return "";
}

void record_peak(const run_queue_state& st, const std::string& id) {
  auto stored = st.cfg.store->find(id);
  if (!stored || stored->info.status != run_status::succeeded)
    return;
  auto metrics = nlohmann::json::parse(stored->info.final_metrics, nullptr, false);
  std::int64_t peak = 0;
  if (metrics.is_object())
    for (const auto& [node, values] : metrics.items())
      if (values.is_object() && values.contains("peak_memory_bytes") && values["peak_memory_bytes"].is_object())
        for (const auto& [device, bytes] : values["peak_memory_bytes"].items())
          if (bytes.is_number_integer())
            peak = std::max(peak, bytes.get<std::int64_t>());
  if (peak <= 0)
    return;
  auto key = runtime::memory_key(nlohmann::json::parse(stored->graph_json, nullptr, false));
  run_request options;
  if (!key || !policy::apply_options(nlohmann::json::parse(stored->info.options, nullptr, false), options).empty())
    return;
  auto cards = std::max<int>(1, static_cast<int>(options.devices.size()));
  st.cfg.store->put_peak(*key, cards, {peak, id, now_ms()});
}

void note_budget(run_queue_state& st, const std::string& id, const std::vector<std::string>& keys,
                 const run_request& req) {
  if (req.memory_bytes > 0)
    st.budgets[id] = {req.memory_bytes, req.has_wait, req.wait, keys};
}

/// A run at the front of a shared card with room by count: the ledger judges its budget.
void ask_memory(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto b = st.budgets.find(id);
  if (b == st.budgets.end()) {
    // Queued while the card was Exclusive, without a budget: it waits until it has one.
    st.slots.wait(id);
    st.waiting_reasons[id] = "waits for memory: its card turned shared by memory and the run has no "
                             "budget; cancel it and submit it again with target.memory_gib";
    return;
  }
  std::vector<std::string> keys;
  for (const auto& k : b->second.keys)
    if (st.slots.gated(k))
      keys.push_back(k);
  if (!keys.empty())
    st.memory_keys[id] = keys.front();
  self->request(st.ledger, request_deadline, atoms::ask::value, id, b->second.bytes, keys, false,
                b->second.has_wait, b->second.wait)
    .then(
      [=](memory_answer& a) {
        auto& st = self->state;
        if (!st.runs.count(id)) {  // ended meanwhile (cancelled)
          self->send(st.ledger, atoms::released::value, id);
          return;
        }
        switch (static_cast<policy::memory_decision::kind>(a.kind)) {
        case policy::memory_decision::kind::grant:
          st.waiting_reasons.erase(id);
          if (!st.slots.grant(id))  // the card turned exclusive meanwhile: it starts by count
            self->send(st.ledger, atoms::released::value, id);
          pump(self);
          break;
        case policy::memory_decision::kind::wait:
          st.waiting_reasons[id] = a.reason;
          st.slots.wait(id);
          break;
        case policy::memory_decision::kind::refuse:
          st.waiting_reasons.erase(id);
          if (st.slots.remove(id))
            caf::anon_send(st.runs.at(id), atoms::stop::value, a.reason);
          pump(self);
          break;
        }
      },
      [=](caf::error& e) {
        auto& st = self->state;
        st.waiting_reasons[id] = "waits for memory: the memory ledger did not answer ("
                                 + caf::to_string(e) + "); asked again when memory frees";
        st.slots.wait(id);
      });
}

void memory_freed(self_ptr self, const std::string& key) {
  self->state.slots.ask_again(key);
  if (!self->state.shutting_down)
    pump(self);
}

void memory_started(self_ptr self, const std::string& id) {
  if (self->state.budgets.count(id))
    self->send(self->state.ledger, atoms::started::value, id);
}

void memory_forget(self_ptr self, const std::string& id) {
  auto& st = self->state;
  record_peak(st, id);
  st.waiting_reasons.erase(id);
  st.memory_keys.erase(id);
  st.budgets.erase(id);
  if (st.ledger)
    self->send(st.ledger, atoms::released::value, id);
}

} // namespace cdui::actors::queue_parts
