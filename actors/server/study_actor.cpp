#include "actors/server/study_actor.hpp"

#include <limits>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/guarded.hpp"
#include "actors/policy/sweep_request.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"

namespace cdui::actors {

namespace {

/// How long a study waits to submit again a trial the queue could not take (a full disk).
constexpr auto resubmit_delay = std::chrono::seconds(5);

using self_ptr = study_actor::stateful_pointer<study_actor_state>;
using nlohmann::json;

/// How long one events request waits for a trial's next event.
constexpr std::uint32_t event_wait_ms = 1000;

void advance(self_ptr self);
void follow(self_ptr self, std::size_t i);

bool started(const study_actor_state& st) {
  for (const auto& t : st.trials)
    if (t.state != policy::trial_state::running || !t.intermediate.empty())
      return true;
  return false;
}

/// Queues trial `number` with `params`: a new one, or one whose run a restart interrupted.
void submit(self_ptr self, std::uint64_t number, policy::variant_params params) {
  auto& st = self->state;
  auto runs = policy::variant_runs(st.base, {params}, st.study.name, number, "space");
  if (auto* why = std::get_if<std::string>(&runs)) {
    spdlog::warn("study {}: trial {} cannot be made: {}", st.study.id, number, *why);
    st.refused = true;
    advance(self);
    return;
  }
  trial_submission t{st.study.id, number, json_text(policy::params_json(params)),
                     std::get<std::vector<run_request>>(runs).front(), {}};
  ++st.submitting;
  self->request(st.queue, caf::infinite, atoms::trial::value, std::move(t))
    .then(
      [=](submit_result& r) {
        auto& st = self->state;
        --st.submitting;
        if (!r.ok()) {
          if (r.unavailable) {
            // It cannot take the trial now: the server stops (and this actor with it; the next
            // start goes on with the study), or its store cannot record it (a full disk). The
            // same trial is submitted again in a while, until it is recorded or the study ends.
            spdlog::warn("study {}: trial {} could not be submitted ({}); it is submitted again in {} s",
                         st.study.id, number, r.error, resubmit_delay.count());
            ++st.submitting;
            st.resubmit.emplace(number, params);
            self->delayed_send(self, resubmit_delay, atoms::tick::value);
            return;
          }
          spdlog::warn("study {}: trial {} was refused: {}", st.study.id, number, r.error);
          st.refused = true;
          advance(self);
          return;
        }
        if (number == st.trials.size()) {
          policy::trial t;
          t.number = number;
          t.params = params;
          st.trials.push_back(std::move(t));
          st.runs.push_back(r.run_id);
          st.cursors.push_back(0);
          st.pruned_at.push_back(std::nullopt);
        } else {  // a trial run again: its old run's metrics are gone with it
          st.trials[number].state = policy::trial_state::running;
          st.trials[number].intermediate.clear();
          st.runs[number] = r.run_id;
          st.cursors[number] = 0;
          st.pruned_at[number] = std::nullopt;
        }
        follow(self, number);
        advance(self);
      },
      [=](caf::error&) { self->quit(); });
}

/// Trial `i`'s run has ended: its state and value, or, interrupted by a restart, run again.
void ended(self_ptr self, std::size_t i, const run_info& info) {
  auto& st = self->state;
  auto& t = st.trials[i];
  if (info.status == run_status::interrupted && !st.study.cancel_asked) {
    spdlog::info("study {}: trial {} was interrupted; it runs again", st.study.id, i);
    submit(self, t.number, t.params);
    return;
  }
  t.state = policy::trial_state_of(info.status);
  if (info.status == run_status::interrupted)
    t.state = policy::trial_state::failed;
  if (t.state == policy::trial_state::complete)
    t.value = policy::trial_value(t, info.final_metrics, st.objective.metric);
  advance(self);
}

/// Reads a batch of trial `i`'s events: its objective's points, each one put to the pruner.
void read(self_ptr self, std::size_t i, const event_batch& batch) {
  auto& st = self->state;
  for (const auto& e : batch.events) {
    st.cursors[i] = e.cursor;
    if (e.type != "metric")
      continue;
    auto point = policy::objective_point(json::parse(e.data, nullptr, false), st.objective.metric);
    if (!point)
      continue;
    if (st.pruned_at[i] && point->first > *st.pruned_at[i])
      continue;  // reported after its prune, before the cancel stopped the run
    st.trials[i].intermediate[point->first] = point->second;
    if (st.pruned_at[i] || st.study.cancel_asked)
      continue;
    auto why = policy::prune_reason(st.spec, st.objective, st.trials, i, point->first);
    if (why.empty())
      continue;
    st.pruned_at[i] = point->first;
    spdlog::info("study {}: trial {} {}", st.study.id, i, why);
    self->request(st.queue, caf::infinite, atoms::cancel::value, st.runs[i], why).then([](bool) {}, [](caf::error&) {});
  }
}

/// Follows trial `i`'s run through its events to its end.
void follow(self_ptr self, std::size_t i) {
  auto& st = self->state;
  auto run = st.runs[i];
  self->request(st.queue, caf::infinite, atoms::events::value, run, st.cursors[i], event_wait_ms)
    .then(
      [=](event_batch& batch) {
        auto& st = self->state;
        if (st.runs[i] != run)
          return;
        read(self, i, batch);
        if (!batch.finished) {
          follow(self, i);
          return;
        }
        self->request(st.queue, caf::infinite, atoms::info::value, run)
          .then([=](run_info& info) { ended(self, i, info); },
                [=](caf::error&) { self->quit(); });
      },
      [=](caf::error&) {
        // An erased run: the trial failed. Otherwise the queue is gone with the server.
        auto& st = self->state;
        if (!st.store->find(run)) {
          st.trials[i].state = policy::trial_state::failed;
          advance(self);
        } else {
          self->quit();
        }
      });
}

/// Starts what the budget allows, or, with every trial ended, writes the final state and quits.
void advance(self_ptr self) {
  auto& st = self->state;
  if (st.submitting > 0)
    return;
  if (!st.refused)
    if (auto n = policy::trials_to_start(st.spec, st.trials, st.study.cancel_asked); n > 0) {
      auto number = st.trials.size();
      submit(self, number, policy::propose(st.spec, st.objective.maximize, st.trials, number));
      return;
    }
  auto state = policy::study_state(st.spec, st.trials, st.study.cancel_asked, started(st));
  bool running = std::any_of(st.trials.begin(), st.trials.end(),
                             [](const auto& t) { return t.state == policy::trial_state::running; });
  if (st.refused && !running && !policy::is_final(state))
    state = policy::sweep_state::failed;
  if (!policy::is_final(state))
    return;
  st.study.state = policy::to_string(state);
  st.study.finished_ms = now_ms();
  st.store->update_study(st.study);
  spdlog::info("study {} {}: {} trials", st.study.id, st.study.state, st.trials.size());
  self->quit();
}

} // namespace

policy::variant_params trial_params(const policy::study_spec& spec, const std::string& params_json) {
  auto j = json::parse(params_json, nullptr, false);
  policy::variant_params out;
  for (const auto& p : spec.space)
    out.push_back({p.node, p.param, j.is_object() ? j.value(p.label(), json()) : json()});
  return out;
}

study_actor::behavior_type study_supervisor(self_ptr self, study_record study, run_queue_actor queue,
                                            std::shared_ptr<storage::run_store> store) {
  auto& st = self->state;
  st.study = std::move(study);
  st.queue = queue;
  st.store = std::move(store);
  auto spec = policy::parse_study_spec(json::parse(st.study.spec, nullptr, false));
  auto objective = policy::parse_objective(json::parse(st.study.objective, nullptr, false));
  auto base = policy::parse_submission(json{{"graph", json::parse(st.study.graph_json, nullptr, false)},
                                            {"options", json::parse(st.study.options, nullptr, false)}});
  if (!std::holds_alternative<policy::study_spec>(spec) || !std::holds_alternative<policy::sweep_objective>(objective)
      || !std::holds_alternative<run_request>(base)) {
    spdlog::error("study {}: its stored spec cannot be read; it fails", st.study.id);
    st.study.state = policy::to_string(policy::sweep_state::failed);
    st.study.finished_ms = now_ms();
    st.store->update_study(st.study);
    self->quit();
    return guarded_typed_behavior<study_actor>("study", [](atoms::tick) {}, [](atoms::cancel) { return false; });
  }
  st.spec = std::get<policy::study_spec>(std::move(spec));
  st.objective = std::get<policy::sweep_objective>(std::move(objective));
  st.base = std::get<run_request>(std::move(base));
  for (const auto& stored : st.store->study_trials(st.study.id)) {
    if (stored.index != st.trials.size())
      break;  // numbers are gap-free; nothing past a gap can be
    policy::trial t;
    t.number = stored.index;
    t.params = trial_params(st.spec, stored.params);
    st.trials.push_back(std::move(t));
    st.runs.push_back(stored.run.id);
    st.cursors.push_back(0);
    // A pruned trial's points count up to its prune, as they did before the restart (an
    // unreadable reason: all of them).
    std::optional<std::int64_t> pruned_at;
    if (stored.run.status == run_status::pruned)
      pruned_at = policy::pruned_step(stored.run.error).value_or(std::numeric_limits<std::int64_t>::max());
    st.pruned_at.push_back(pruned_at);
  }
  // Every trial's events from the start: ended runs' from the store, which gives the pruners and
  // TPE the history after a restart.
  for (std::size_t i = 0; i < st.trials.size(); ++i)
    follow(self, i);
  // Trial 0 is queued with the study: the trials next to it start now, up to max_parallel.
  advance(self);
  return guarded_typed_behavior<study_actor>("study",
    [=](atoms::tick) {
      auto& st = self->state;
      auto again = std::exchange(st.resubmit, std::nullopt);
      if (!again)
        return;
      --st.submitting;
      if (st.study.cancel_asked)
        advance(self);  // cancelled meanwhile: no more trials
      else
        submit(self, again->first, again->second);
    },
    [=](atoms::cancel) {
    auto& st = self->state;
    if (policy::is_final(policy::study_state(st.spec, st.trials, st.study.cancel_asked, true))
        && !st.study.cancel_asked && st.trials.size() >= st.spec.trials)
      return false;
    if (!st.study.cancel_asked) {
      st.study.cancel_asked = true;
      st.store->update_study(st.study);
    }
    for (std::size_t i = 0; i < st.trials.size(); ++i)
      if (st.trials[i].state == policy::trial_state::running)
        self->request(st.queue, caf::infinite, atoms::cancel::value, st.runs[i]).then([](bool) {}, [](caf::error&) {});
    advance(self);
    return true;
  });
}

} // namespace cdui::actors
