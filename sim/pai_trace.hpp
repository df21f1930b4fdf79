#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <variant>

#include "sim/job.hpp"

namespace cdui::sim {

/// A trace read from the tables of Alibaba's PAI GPU cluster trace (cluster-trace-gpu-v2020), in
/// their columns, without or with a header line:
///   pai_job_table.csv:    job_name,inst_id,user,status,start_time,end_time
///   pai_task_table.csv:   job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type
///   pai_sensor_table.csv: job_name,task_name,worker_name,inst_id,machine,gpu_name,cpu_usage,gpu_wrk_util,
///                         avg_mem,max_mem,avg_gpu_wrk_mem,max_gpu_wrk_mem,read,write,read_count,write_count
/// A job is one run: submitted at its job row's start_time (all times shifted so that the first is
/// 0); its cards the sum over its GPU tasks (plan_gpu > 0) of inst_num x ceil(plan_gpu / 100), so
/// a task asking for half a GPU asks for one card; its duration the longest of those tasks
/// (end_time - start_time); its peak per card the largest max_gpu_wrk_mem of its instances, read as
/// GiB. Kept: jobs whose status is Terminated (the trace's successful ones) with a GPU task and a
/// GPU memory figure.
struct pai_trace {
  trace jobs;
  std::size_t not_terminated = 0;
  std::size_t no_gpu = 0;
  std::size_t no_memory_figure = 0;
};

/// The trace in `folder`, or why it cannot be read (a file missing, a row naming its line).
[[nodiscard]] std::variant<pai_trace, std::string> read_pai(const std::filesystem::path& folder);

/// Writes `jobs` as the three tables in `folder` (made, without a header, as the originals are):
/// each job one task of `cards` instances of plan_gpu 100 (a single card's job sometimes asks for
/// 25 or 50), submitted and started at its arrival; names are hex digests drawn from `seed`.
/// read_pai() of them gives `jobs` back (peaks rounded to whole MiB).
void write_pai(const std::filesystem::path& folder, const trace& jobs, std::uint64_t seed);

} // namespace cdui::sim
