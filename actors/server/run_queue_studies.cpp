// The run queue's part for studies: a trial's run is checked as a submit is, then recorded with
// its trial (and, for the first, its study) in one transaction and queued.

#include <caf/all.hpp>

#include "actors/server/run_queue_parts.hpp"

namespace cdui::actors {

using namespace queue_parts;

submit_result queue_parts::submit_trial(self_ptr self, trial_submission& t) {
  auto& st = self->state;
  if (st.shutting_down)
    return refusal("the server is shutting down; submit the study again once it has restarted", true);
  record_submits(self);  // the runs submitted before it queue before it
  auto prepared = prepare_submit(st, t.run);
  if (auto* refused = std::get_if<submit_result>(&prepared))
    return *refused;
  auto& p = std::get<prepared_run>(prepared);
  try {
    give_identity(st, p, t.run, new_run_id(st));
    // One transaction: a crash leaves the trial with its run, or neither, so a restarted study
    // neither loses nor repeats it.
    storage::stored_run row{p.setup.info, t.run.graph_json};
    st.cfg.store->insert_trial(t.study.id.empty() ? nullptr : &t.study, t.study_id, t.number, row, t.params,
                               [&] { return new_run_id(st); });
    take_recorded_id(st, p, row.info.id);
  } catch (const std::exception& e) {
    return refusal(std::string{"the server cannot record the trial: "} + e.what(), true);
  }
  auto id = p.setup.info.id;
  std::vector<submit_warning> warnings;
  for (const auto& [kind, message] : p.warnings)
    warnings.push_back({kind, message});
  launch(self, std::move(p), t.run);
  pump(self);
  return {id, "", false, std::move(warnings)};
}

} // namespace cdui::actors
