#include "sim/outcome.hpp"

#include <algorithm>
#include <cmath>

namespace cdui::sim {

std::int64_t quantile(std::vector<std::int64_t>& values, double q) {
  if (values.empty())
    return 0;
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  auto at = values.begin() + static_cast<std::ptrdiff_t>(std::clamp<std::size_t>(rank, 1, values.size()) - 1);
  std::nth_element(values.begin(), at, values.end());
  return *at;
}

summary summarize(const std::string& policy, const trace& jobs, const std::vector<job_outcome>& outcomes,
                  double peak_byte_seconds, double busy_card_seconds, std::int64_t memory,
                  std::size_t cards) {
  using state = job_outcome::state;
  summary s;
  s.policy = policy;
  s.jobs = jobs.size();
  std::vector<std::int64_t> waits;
  std::vector<std::int64_t> set_waits;
  std::int64_t first = jobs.empty() ? 0 : jobs.front().arrival;
  std::int64_t last = first;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& o = outcomes[i];
    const bool set = jobs[i].cards > 1;
    s.sets += set;
    s.done += o.how == state::done;
    s.oom += o.how == state::oom;
    s.refused += o.how == state::refused;
    if (o.how == state::waiting) {
      ++s.never_started;
      s.sets_never_started += set;
    }
    if (o.start < 0)
      continue;
    s.over_budget += o.budget > 0 && jobs[i].peak > o.budget;
    waits.push_back(o.start - jobs[i].arrival);
    if (set)
      set_waits.push_back(waits.back());
    last = std::max(last, o.end);
  }
  s.makespan = last - first;
  auto window = jobs.empty() || jobs.back().arrival == first ? s.makespan : jobs.back().arrival - first;
  if (window > 0) {
    s.memory_used = peak_byte_seconds / (static_cast<double>(memory) * static_cast<double>(window));
    s.cards_busy = busy_card_seconds / (static_cast<double>(cards) * static_cast<double>(window));
  }
  s.wait_p50 = quantile(waits, 0.5);
  s.wait_p99 = quantile(waits, 0.99);
  s.set_wait_p50 = quantile(set_waits, 0.5);
  s.set_wait_p99 = quantile(set_waits, 0.99);
  s.set_wait_max = set_waits.empty() ? 0 : *std::max_element(set_waits.begin(), set_waits.end());
  return s;
}

} // namespace cdui::sim
