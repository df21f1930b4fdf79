// cdui::server's sweeps and studies: submitted as one transaction each, read from the store,
// followed and cancelled through their actors.
#include "actors/server/server_impl.hpp"

namespace cdui {

sweep_submit_result server::submit_sweep(policy::sweep_request request) {
  auto refused = [](std::string why) {
    sweep_submit_result r;
    r.error = std::move(why);
    return r;
  };
  if (auto why = policy::limit_refusal(policy::variant_count(request.spec), impl_->max_sweep_runs); !why.empty())
    return refused(why);
  if (!request.spec.has_seed) {
    request.spec.has_seed = true;
    request.spec.seed = std::random_device{}();
  }
  sweep_record sweep;
  for (sweep.id = actors::random_id(); impl_->store->find_sweep(sweep.id); sweep.id = actors::random_id()) {
  }
  sweep.name = request.base.name.empty() ? "sweep " + sweep.id : request.base.name;
  sweep.graph_json = request.base.graph_json;
  sweep.spec = json_text(policy::spec_json(request.spec));
  sweep.objective = json_text(policy::objective_json(request.objective));
  sweep.options = json_text(policy::options_json(request.base));
  sweep.created_ms = now_ms();
  auto variants = policy::expand(request.spec);
  auto runs = policy::variant_runs(request.base, variants, sweep.name);
  if (auto* why = std::get_if<std::string>(&runs))
    return refused(*why);
  sweep_submission submission{sweep, std::get<std::vector<run_request>>(std::move(runs)), {}};
  submission.params.reserve(variants.size());
  for (const auto& v : variants)
    submission.params.push_back(json_text(policy::params_json(v)));
  auto answer = impl_->ask<sweep_submit_result>(atoms::sweep::value, std::move(submission));
  if (!answer)
    return sweep_submit_result{"", {}, answer.error().message, true};
  if (answer->ok())
    impl_->follow_sweep(sweep, answer->run_ids);
  return *answer;
}

answer<sweep_record> server::sweep(const std::string& sweep_id) {
  return impl_->read_store([&]() -> answer<sweep_record> {
    if (auto sweep = impl_->store->find_sweep(sweep_id))
      return std::move(*sweep);
    return api_error{error_kind::not_found, "no sweep has the id '" + sweep_id + "'"};
  });
}

std::vector<sweep_child> server::sweep_runs(const std::string& sweep_id) {
  return impl_->store->sweep_children(sweep_id);
}

std::vector<sweep_record> server::sweeps() {
  return impl_->store->sweeps();
}

answer<bool> server::cancel_sweep(const std::string& sweep_id) {
  auto found = sweep(sweep_id);
  if (!found)
    return found.error();
  return impl_->cancel_search(impl_->sweeps, sweep_id);
}

submit_result server::submit_study(policy::study_request request) {
  if (request.spec.trials > impl_->max_sweep_runs)
    return actors::refusal("budget.trials: " + std::to_string(request.spec.trials) + " trials, more than the "
                           + std::to_string(impl_->max_sweep_runs) + " a study may have (" + policy::max_sweep_runs_env
                           + "); nothing was queued");
  if (!request.spec.has_seed) {
    request.spec.has_seed = true;
    request.spec.seed = std::random_device{}();
  }
  study_record study;
  for (study.id = actors::random_id(); impl_->store->find_study(study.id); study.id = actors::random_id()) {
  }
  study.name = request.base.name.empty() ? "study " + study.id : request.base.name;
  study.graph_json = request.base.graph_json;
  study.spec = json_text(policy::study_spec_json(request.spec));
  study.objective = json_text(policy::objective_json(request.objective));
  study.options = json_text(policy::options_json(request.base));
  study.created_ms = now_ms();
  // Trial 0 is checked as a submit is and recorded with the study, or the study is refused whole.
  auto params = policy::propose(request.spec, request.objective.maximize, {}, 0);
  auto runs = policy::variant_runs(request.base, {params}, study.name, 0, "space");
  if (auto* why = std::get_if<std::string>(&runs))
    return actors::refusal(*why);
  trial_submission first{study.id, 0, json_text(policy::params_json(params)),
                         std::get<std::vector<run_request>>(runs).front(), study};
  auto answer = impl_->ask<submit_result>(atoms::trial::value, std::move(first));
  if (!answer)
    return actors::refusal(answer.error().message, true);
  if (!answer->ok()) {
    if (!answer->unavailable)
      answer->error = "trial 0 " + json_text(policy::params_json(params)) + ": " + answer->error + "; nothing was queued";
    return *answer;
  }
  impl_->follow_study(study);
  // The study's id, and its first trial's run in warnings' place: the caller reads study_id.
  submit_result r = *answer;
  r.run_id = study.id;
  return r;
}

answer<study_record> server::study(const std::string& study_id) {
  return impl_->read_store([&]() -> answer<study_record> {
    if (auto study = impl_->store->find_study(study_id))
      return std::move(*study);
    return api_error{error_kind::not_found, "no study has the id '" + study_id + "'"};
  });
}

std::vector<study_trial> server::study_trials(const std::string& study_id) {
  return impl_->store->study_trials(study_id);
}

std::vector<study_record> server::studies() {
  return impl_->store->studies();
}

answer<bool> server::cancel_study(const std::string& study_id) {
  auto found = study(study_id);
  if (!found)
    return found.error();
  return impl_->cancel_search(impl_->studies, study_id);
}

} // namespace cdui
