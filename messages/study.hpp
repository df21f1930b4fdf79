#pragma once

#include <cstdint>
#include <string>

#include "messages/fields.hpp"
#include "messages/run_request.hpp"
#include "messages/sweep.hpp"

namespace cdui {

/// A study as cdui.db keeps it: a sweep's fields (its spec is the search: space, budget, sampler,
/// pruner and seed), "active" until it ends.
using study_record = sweep_record;

/// One trial: its number, its params and its run as stored now.
using study_trial = sweep_child;

/// One trial for the run queue to check and queue: its run, recorded with the trial (and, for the
/// first, the study) in one transaction.
struct trial_submission {
  std::string study_id;
  std::uint64_t number = 0;
  /// {"node.param": value}, JSON text.
  std::string params = "{}";
  run_request run;
  /// The study's record, written with its first trial; empty id for the trials after it.
  study_record study;
  CDUI_FIELDS(study_id, number, params, run, study)
};

} // namespace cdui
