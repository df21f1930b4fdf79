// The run queue's part for sweeps: a sweep's runs are queued all together or not at all.

#include <set>

#include <caf/all.hpp>

#include "actors/server/run_queue_parts.hpp"
#include "messages/clock.hpp"

namespace cdui::actors {

using namespace queue_parts;

namespace {

sweep_submit_result sweep_refusal(std::string why, bool unavailable = false) {
  sweep_submit_result r;
  r.error = std::move(why);
  r.unavailable = unavailable;
  return r;
}

/// Folders made for a sweep that could not be recorded after all.
void remove_folders(const std::vector<prepared_run>& ready) {
  for (const auto& p : ready)
    if (p.setup.dir) {
      std::error_code ec;
      std::filesystem::remove_all(p.setup.dir->path(), ec);
    }
}

} // namespace

sweep_submit_result queue_parts::submit_sweep(self_ptr self, sweep_submission& s) {
  auto& st = self->state;
  if (st.shutting_down)
    return sweep_refusal("the server is shutting down; submit the sweep again once it has restarted", true);
  // Every variant is checked before anything is written: one refusal refuses the sweep whole.
  std::vector<prepared_run> ready;
  ready.reserve(s.runs.size());
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    auto prepared = prepare_submit(st, s.runs[i]);
    if (auto* refused = std::get_if<submit_result>(&prepared))
      return sweep_refusal("variant " + std::to_string(i) + " " + s.params.at(i) + ": " + refused->error
                             + "; nothing was queued",
                           refused->unavailable);
    ready.push_back(std::get<prepared_run>(std::move(prepared)));
  }
  sweep_submit_result answer;
  answer.sweep_id = s.sweep.id;
  std::vector<storage::stored_run> rows;
  rows.reserve(ready.size());
  std::set<std::string> taken;
  try {
    for (std::size_t i = 0; i < ready.size(); ++i) {
      auto id = new_run_id(st);
      while (!taken.insert(id).second)
        id = new_run_id(st);
      give_identity(st, ready[i], s.runs[i], id);
      rows.push_back({ready[i].setup.info, s.runs[i].graph_json});
      answer.run_ids.push_back(id);
    }
    // One transaction: a crash leaves the whole sweep recorded, or none of it.
    st.cfg.store->insert_sweep(s.sweep, rows, s.params);
  } catch (const std::exception& e) {
    remove_folders(ready);
    return sweep_refusal(std::string{"the server cannot record the sweep: "} + e.what(), true);
  }
  for (std::size_t i = 0; i < ready.size(); ++i)
    launch(self, std::move(ready[i]), s.runs[i]);
  pump(self);
  return answer;
}

} // namespace cdui::actors
