#include "sim/pai_trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "actors/policy/sweep_spec.hpp"
#include "messages/run_request.hpp"

namespace cdui::sim {

namespace {

const char* const job_table = "pai_job_table.csv";
const char* const task_table = "pai_task_table.csv";
const char* const sensor_table = "pai_sensor_table.csv";

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    auto comma = line.find(',', from);
    out.push_back(line.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos)
      return out;
    from = comma + 1;
  }
}

/// A number field; nullopt when empty or not a number (the trace leaves missing values empty).
std::optional<double> number(const std::string& text) {
  if (text.empty())
    return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v))
    return std::nullopt;
  return v;
}

/// Each row of a table with at least `columns` fields, a header line (starting "job_name") skipped.
std::variant<std::vector<std::vector<std::string>>, std::string>
rows_of(const std::filesystem::path& file, std::size_t columns) {
  std::ifstream in{file};
  if (!in)
    return "cannot read " + file.string();
  std::vector<std::vector<std::string>> rows;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty() || (n == 1 && line.rfind("job_name,", 0) == 0))
      continue;
    auto fields = fields_of(line);
    if (fields.size() < columns)
      return file.string() + " line " + std::to_string(n) + ": " + std::to_string(fields.size())
             + " fields, not " + std::to_string(columns);
    rows.push_back(std::move(fields));
  }
  return rows;
}

struct gpu_use {
  int cards = 0;
  double duration = 0;
  double peak_gib = 0;
};

/// Lowercase hex of `digits` digits drawn from `rng`.
std::string hex(policy::sweep_random& rng, std::size_t digits) {
  static const char* const alphabet = "0123456789abcdef";
  std::string out;
  while (out.size() < digits) {
    auto bits = rng.next();
    for (int i = 0; i < 16 && out.size() < digits; ++i, bits >>= 4)
      out += alphabet[bits & 15];
  }
  return out;
}

/// The shortest text that reads back as `v`, with a decimal point as the trace writes its numbers
/// ("4550879.0").
std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  if (std::strtod(buf, nullptr) != v)
    std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string out = buf;
  if (out.find_first_of(".e") == std::string::npos)
    out += ".0";
  return out;
}

} // namespace

std::variant<pai_trace, std::string> read_pai(const std::filesystem::path& folder) {
  auto jobs = rows_of(folder / job_table, 6);
  auto tasks = rows_of(folder / task_table, 10);
  auto sensors = rows_of(folder / sensor_table, 12);
  for (auto* table : {&jobs, &tasks, &sensors})
    if (auto* why = std::get_if<std::string>(table))
      return *why;
  std::unordered_map<std::string, gpu_use> use;
  for (const auto& t : std::get<0>(tasks)) {
    auto inst = number(t[2]);
    auto start = number(t[4]);
    auto end = number(t[5]);
    auto gpu = number(t[8]);
    if (!inst || !gpu || *gpu <= 0 || *inst < 1)
      continue;
    auto& u = use[t[0]];
    u.cards += static_cast<int>(*inst) * static_cast<int>(std::ceil(*gpu / 100));
    if (start && end)
      u.duration = std::max(u.duration, *end - *start);
  }
  for (const auto& s : std::get<0>(sensors))
    if (auto peak = number(s[11]); peak && use.count(s[0]))
      use[s[0]].peak_gib = std::max(use[s[0]].peak_gib, *peak);
  pai_trace out;
  std::vector<std::pair<double, job>> kept;
  for (const auto& j : std::get<0>(jobs)) {
    auto submit = number(j[4]);
    if (j[3] != "Terminated" || !submit) {
      ++out.not_terminated;
      continue;
    }
    auto u = use.find(j[0]);
    if (u == use.end() || u->second.cards < 1) {
      ++out.no_gpu;
      continue;
    }
    if (u->second.peak_gib <= 0) {
      ++out.no_memory_figure;
      continue;
    }
    job run;
    run.cards = u->second.cards;
    run.peak = std::llround(u->second.peak_gib * bytes_per_gib);
    run.duration = std::max<std::int64_t>(1, std::llround(u->second.duration));
    kept.emplace_back(*submit, run);
  }
  std::stable_sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [submit, run] : kept) {
    run.arrival = std::llround(submit - kept.front().first);
    out.jobs.push_back(run);
  }
  return out;
}

void write_pai(const std::filesystem::path& folder, const trace& jobs, std::uint64_t seed) {
  std::filesystem::create_directories(folder);
  std::ofstream job_rows{folder / job_table};
  std::ofstream task_rows{folder / task_table};
  std::ofstream sensor_rows{folder / sensor_table};
  policy::sweep_random rng{seed};
  // The originals' times are seconds shifted by a constant; so are these.
  constexpr double epoch = 1000000;
  constexpr double mib = 1024.0 * 1024.0;
  for (const auto& j : jobs) {
    auto name = hex(rng, 24);
    auto inst = hex(rng, 60);
    auto user = hex(rng, 12);
    auto start = epoch + static_cast<double>(j.arrival);
    auto end = start + static_cast<double>(j.duration);
    auto peak_gib = std::round(static_cast<double>(j.peak) / mib) / 1024.0;
    // A single card's job may ask for a share of a GPU, as PAI's do; cdui gives it a card.
    auto share = rng.uniform();
    auto plan_gpu = j.cards > 1 || share < 0.6 ? 100.0 : share < 0.8 ? 50.0 : 25.0;
    job_rows << name << ',' << inst << ',' << user << ",Terminated," << num(start) << ',' << num(end) << '\n';
    task_rows << name << ',' << (j.cards > 1 ? "worker" : "tensorflow") << ',' << num(j.cards) << ",Terminated,"
              << num(start) << ',' << num(end) << ",600.0,29.296875," << num(plan_gpu) << ",V100\n";
    for (int w = 0; w < j.cards; ++w)
      sensor_rows << name << ',' << (j.cards > 1 ? "worker" : "tensorflow") << ',' << hex(rng, 60) << ','
                  << inst << ',' << hex(rng, 24) << ",/dev/nvidia" << w << ','
                  << num(std::round(rng.uniform() * 60000) / 100) << ',' << num(std::round(rng.uniform() * 10000) / 100)
                  << ",4.5,6.25," << num(std::round(peak_gib * 0.8 * 1024) / 1024) << ',' << num(peak_gib)
                  << ",0.0,0.0,0.0,0.0\n";
  }
}

} // namespace cdui::sim
