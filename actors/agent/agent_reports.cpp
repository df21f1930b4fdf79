// What the agent tells the server about itself and its runs (actors/agent/agent_actor.*): its
// hello with its devices' memory now, a run's recorded outputs, and the end of a run's processes.
#include <cstdlib>
#include <fstream>

#include <sys/sysinfo.h>

#include "actors/agent/agent_parts.hpp"
#include "actors/agent/ddp_rank.hpp"
#include "actors/agent/run_supervisor.hpp"
#include "devices/card_memory.hpp"
#include "devices/device.hpp"
#include "messages/digest.hpp"
#include "messages/version.hpp"
#include "runtime/node_keys.hpp"
#include "storage/credentials.hpp"
#include "storage/home.hpp"
#include "storage/server_files.hpp"

namespace cdui::actors {

namespace agent_parts {

std::filesystem::path runs_dir(const agent_state& st) {
  return st.setup.home / "agents" / st.setup.name / "runs";
}

/// Each offer's memory now: the host's RAM for the CPU (the first offer); for a card, what it has
/// free counting every process on it, another user's job included (a sim card's shared memory, a
/// CUDA card's driver figure).
void measure_device_memory(std::vector<device_offer>& offers) {
  offers.front() = this_host_cpu_offer();
  for (auto& offer : offers)
    if (offer.kind != "cpu")
      offer.free_bytes = devices::card_free_bytes(offer.kind, offer.uuid, offer.total_bytes);
}

std::vector<std::string> runs_held(const agent_state& st) {
  std::vector<std::string> ids;
  for (const auto& [id, r] : st.runs)
    ids.push_back(id);
  for (const auto& a : st.held)
    ids.push_back(a.run_id);
  return ids;
}

hello make_hello(agent_state& st) {
  hello h;
  h.name = st.setup.name;
  h.version = version();
  h.env_digest = fnv1a_hex(st.setup.environment);
  h.node_types_digest = runtime::node_types_digest();
  measure_device_memory(st.setup.offers);
  h.devices = st.setup.offers;
  // Read at each hello: a re-keyed credential's file can be replaced while the agent runs.
  h.credential = (st.setup.credential_file.empty() ? storage::read_token(st.setup.home)
                                                   : storage::read_first_line(st.setup.credential_file))
                   .value_or("");
  h.running_runs = runs_held(st);
  h.one_shot = st.setup.one_shot;
  return h;
}

/// The outputs a record_outputs run left in its folder, for the server.
outputs_reply outputs_of(const agent_state& st, const std::string& run_id) {
  outputs_reply r{run_id, false, "", "", false};
  const auto& worker = st.setup.name;
  // A run id names a folder here: nothing that could leave runs_dir().
  if (run_id.empty() || run_id.size() > 64
      || run_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
           != std::string::npos) {
    r.error = "'" + run_id + "' is not a run id";
    return r;
  }
  auto dir = runs_dir(st) / run_id;
  auto held = st.runs.find(run_id);
  if (held != st.runs.end() && held->second.executing) {
    r.error = "run " + run_id + " is running on worker '" + worker
              + "'; its outputs are recorded when it ends";
    return r;
  }
  if (!std::filesystem::exists(dir)) {
    r.error = "worker '" + worker + "' no longer has run " + run_id + " (its folder " + dir.string()
              + " is gone)";
    return r;
  }
  auto file = dir / "outputs.json";
  std::error_code ec;
  auto size = std::filesystem::file_size(file, ec);
  if (ec) {
    r.error = "run " + run_id + " left no recorded outputs on worker '" + worker + "'";
    return r;
  }
  if (size + 4096 > wire::max_frame_bytes) {
    r.error = "run " + run_id + "'s recorded outputs (" + std::to_string(size) + " bytes, in "
              + file.string() + " on worker '" + worker + "') are too large to send";
    return r;
  }
  std::ifstream in{file, std::ios::binary};
  r.nodes_json.assign(std::istreambuf_iterator<char>{in}, {});
  r.found = true;
  return r;
}

std::string leaving_reason() {
  auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string{value == nullptr ? "" : value};
  };
  std::string where;
  if (auto job = env("SLURM_JOB_ID"); !job.empty())
    where = "SLURM job " + job + (env("SLURMD_NODENAME").empty() ? "" : " on node " + env("SLURMD_NODENAME"));
  else if (auto pod = env("POD_NAME"); !pod.empty())
    where = "pod " + pod;
  return "its agent stopped" + (where.empty() ? std::string{} : " in " + where);
}

bool stop_run_processes(const std::filesystem::path& dir) {
  bool stopped = false;
  for (int k = 0;; ++k) {
    auto file = k == 0 ? std::string{"exec.pid"} : ddp_rank_pid_file(k);
    if (k > 0 && !std::filesystem::exists(dir / file))
      break;
    if (stop_run_process(run_process_pid(dir, file), dir))
      stopped = stopped || k == 0;
  }
  return stopped;
}

} // namespace agent_parts

std::string this_host_name() {
  auto name = devices::host_name();
  return name.empty() ? "worker" : name;
}

device_offer this_host_cpu_offer() {
  struct sysinfo info {};
  ::sysinfo(&info);
  auto unit = static_cast<std::int64_t>(info.mem_unit);
  return {"cpu", "cpu", "cpu-" + this_host_name(), static_cast<std::int64_t>(info.totalram) * unit,
          static_cast<std::int64_t>(info.freeram + info.bufferram) * unit};
}

} // namespace cdui::actors
