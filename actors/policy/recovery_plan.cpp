#include "actors/policy/recovery_plan.hpp"

#include <nlohmann/json.hpp>

#include "actors/policy/run_options.hpp"
#include "messages/slot_key.hpp"

namespace cdui::policy {

std::vector<recovery_step> recovery_plan(const std::vector<run_info>& unfinished, bool has_workers) {
  std::vector<recovery_step> plan;
  for (const auto& info : unfinished) {
    recovery_step step;
    step.run_id = info.id;
    auto key = slot_key::parse(info.queue_key);
    bool running = info.status == run_status::running;
    // A run a worker executes may still be going there: it waits for its worker to bring it back.
    bool adoptable = running && has_workers && !key.local();
    if (running && !adoptable) {
      step.status = run_status::interrupted;
      step.reason = stopped_while_running;
      plan.push_back(std::move(step));
      continue;
    }
    auto& req = step.request;
    req.name = info.name;
    auto error = apply_options(nlohmann::json::parse(info.options, nullptr, false), req);
    if (!error.empty()) {
      step.status = run_status::failed;
      step.reason = not_requeued + error;
      plan.push_back(std::move(step));
      continue;
    }
    // A run for any worker or the pool that was placed on a worker is that worker's run now.
    if (adoptable && is_placed_later(req.worker)) {
      req.worker = key.offerer;
      req.devices.clear();
    }
    // A worker run resumes on the devices it was given, even before its worker reconnects.
    if (!req.worker.empty() && !is_placed_later(req.worker) && req.devices.empty()
        && !info.queue_key.empty())
      req.devices = {key.device};
    step.what = adoptable ? recovery_step::action::adopt : recovery_step::action::requeue;
    plan.push_back(std::move(step));
  }
  return plan;
}

} // namespace cdui::policy
