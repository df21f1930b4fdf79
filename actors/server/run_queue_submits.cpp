// The run queue's part for submits: each checked once, the submits that arrive together
// recorded in one transaction (issue 16), then queued and answered.
#include <memory>

#include <caf/all.hpp>

#include "actors/policy/run_options.hpp"
#include "actors/server/run_queue_parts.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"

namespace cdui::actors {

using namespace queue_parts;

caf::result<submit_result> queue_parts::submit(self_ptr self, run_request& req) {
  auto& st = self->state;
  if (st.shutting_down)
    return refusal("the server is shutting down; submit the run again once it has restarted", true);
  auto prepared = prepare_submit(st, req);
  if (auto* refused = std::get_if<submit_result>(&prepared))
    return *refused;
  auto& p = std::get<prepared_run>(prepared);
  // The next submit's checks must see this one queued when they depend on the queue: the
  // interactive lane's count and sessions, and the idle card a worker run takes. Those are
  // recorded at once (after the ones waiting), in a commit of their own.
  bool at_once = req.lane == run_lane::interactive || !p.setup.worker.empty();
  give_identity(st, p, req, new_run_id(st));
  st.unrecorded_ids.insert(p.setup.info.id);
  auto rp = self->make_response_promise<submit_result>();
  st.unrecorded.push_back(std::make_shared<pending_submit>(pending_submit{std::move(p), std::move(req), rp}));
  // With nothing else in the mailbox there is no submit to share the commit with: it is made now,
  // not after a flush message's round through the scheduler (one client that waits for each
  // answer). Else the submits already in the mailbox come before this (flush): they share it.
  if (at_once || self->mailbox().empty())
    record_submits(self);
  else if (st.unrecorded.size() == 1)
    self->send(self, atoms::flush::value);
  return rp;
}


void queue_parts::record_submits(self_ptr self) {
  auto& st = self->state;
  if (st.unrecorded.empty())
    return;
  auto batch = std::move(st.unrecorded);
  st.unrecorded.clear();
  st.unrecorded_ids.clear();
  auto refuse_all = [&](const std::string& why) {
    for (auto& s : batch)
      s->promise.deliver(refusal(why, true));
  };
  if (st.shutting_down) {
    refuse_all("the server is shutting down; submit the run again once it has restarted");
    return;
  }
  std::vector<storage::stored_run> rows;
  rows.reserve(batch.size());
  for (const auto& s : batch)
    rows.push_back({s->run.setup.info, s->request.graph_json});
  try {
    // Recorded before any is acknowledged: a crash after this line loses none of them.
    st.cfg.store->insert(rows, [&] { return new_run_id(st); });
  } catch (const std::exception& e) {
    // The server's own failure (a full disk, say), not the request's: 503, not 400.
    refuse_all(std::string{"the server cannot record the run: "} + e.what());
    return;
  }
  std::vector<submit_result> answers;
  answers.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto& s = batch[i];
    take_recorded_id(st, s->run, rows[i].info.id);
    submit_result answer{s->run.setup.info.id, "", false, {}};
    for (const auto& [kind, message] : s->run.warnings)
      answer.warnings.push_back({kind, message});
    answers.push_back(std::move(answer));
    launch(self, std::move(s->run), s->request);
  }
  pump(self);
  for (std::size_t i = 0; i < batch.size(); ++i)
    batch[i]->promise.deliver(std::move(answers[i]));
}

std::variant<prepared_run, submit_result> queue_parts::prepare_submit(run_queue_state& st, run_request& req) {
  auto prepared = prepare_run(st, req);
  if (auto* p = std::get_if<prepared_run>(&prepared))
    if (auto why = settle_budget(st, req, *p); !why.empty())
      return refusal(why);
  return prepared;
}

void queue_parts::give_identity(run_queue_state& st, prepared_run& p, const run_request& req, std::string id) {
  auto& info = p.setup.info;
  info.id = std::move(id);
  info.name = req.name;
  info.queue_key = p.queue_key;
  info.created_ms = now_ms();
  info.options = json_text(policy::options_json(req));
  // Its folder is made when it starts (run_actor): a queued run is in the store alone.
  p.setup.context.run_dir = st.cfg.home / "runs" / info.id;
  p.setup.has_events = false;  // a new run: nothing to read back from the store
}

void queue_parts::take_recorded_id(run_queue_state& st, prepared_run& p, const std::string& recorded) {
  if (p.setup.info.id == recorded)
    return;
  p.setup.info.id = recorded;
  p.setup.context.run_dir = st.cfg.home / "runs" / recorded;
}

} // namespace cdui::actors
