#pragma once
// A real one-node SLURM cluster for a test, from Debian's packages (slurmctld, slurmd,
// slurm-client and munge: scripts/install-deps.sh installs them): munged, slurmctld and slurmd run
// as this process's children on a folder of the test's, with a generated slurm.conf (free ports on
// 127.0.0.1, one node `cdui-node` with this machine's CPUs, proctrack/linuxproc, a KillWait of 5 s).
// slurmd launches jobs as their user, which needs root (as the CI's sandbox runs tests); elsewhere,
// or without the packages, up() is false and why_not() says why, for the test to report. The
// destructor cancels every job, waits for them to end and stops the daemons by their pids.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "testkit/process.hpp"
#include "testkit/wait.hpp"

namespace cdui::test {

class slurm_cluster {
public:
  /// The node's name in the cluster: SLURMD_NODENAME in its jobs.
  static constexpr const char* node = "cdui-node";

  explicit slurm_cluster(std::filesystem::path dir) : dir_(std::move(dir)) {
    for (const char* tool : {"/usr/sbin/munged", "/usr/sbin/mungekey", "/usr/sbin/slurmctld", "/usr/sbin/slurmd",
                             "/usr/bin/sbatch", "/usr/bin/squeue", "/usr/bin/scancel", "/usr/bin/sinfo"})
      if (!std::filesystem::exists(tool)) {
        why_not_ = std::string{tool} + " is not installed (scripts/install-deps.sh installs slurmctld, "
                   "slurmd, slurm-client and munge)";
        return;
      }
    if (::geteuid() != 0) {
      why_not_ = "slurmd launches jobs as their user, which needs root";
      return;
    }
    for (const char* sub : {"state", "spool", "run", "log"})
      std::filesystem::create_directories(dir_ / sub);
    auto key = run_command({"/usr/sbin/mungekey", "--create", "--keyfile", (dir_ / "munge.key").string(), "--force"}, {}, limit);
    if (key.code != 0)
      throw std::runtime_error("mungekey failed: " + key.err);
    std::filesystem::permissions(dir_ / "munge.key", std::filesystem::perms::owner_read);
    munged_ = std::make_unique<process>(
      std::vector<std::string>{"/usr/sbin/munged", "--foreground", "--force", "--socket", socket().string(),
                               "--key-file", (dir_ / "munge.key").string(), "--pid-file",
                               (dir_ / "run" / "munged.pid").string(), "--seed-file",
                               (dir_ / "run" / "munged.seed").string(), "--log-file",
                               (dir_ / "log" / "munged.log").string()},
      std::map<std::string, std::string>{}, dir_ / "log" / "munged.out");
    if (!eventually([&] { return std::filesystem::exists(socket()); }, std::chrono::seconds(20)))
      throw std::runtime_error("munged did not make its socket " + socket().string());
    write_conf();
    slurmctld_ = std::make_unique<process>(std::vector<std::string>{"/usr/sbin/slurmctld", "-D", "-i"}, env(),
                                           dir_ / "log" / "slurmctld.out");
    slurmd_ = std::make_unique<process>(std::vector<std::string>{"/usr/sbin/slurmd", "-D", "-N", node}, env(),
                                        dir_ / "log" / "slurmd.out");
    if (!eventually([&] { return tool({"/usr/bin/sinfo", "-h", "-o", "%T"}).out.rfind("idle", 0) == 0; },
                    std::chrono::seconds(60)))
      throw std::runtime_error("the SLURM node did not come up idle: " + tool({"/usr/bin/sinfo"}).out
                               + " (logs in " + (dir_ / "log").string() + ")");
    up_ = true;
  }

  ~slurm_cluster() {
    if (up_) {
      tool({"/usr/bin/scancel", "--full", "--partition", "test"});
      eventually([&] { return tool({"/usr/bin/squeue", "-h"}).out.empty(); }, std::chrono::seconds(30));
    }
    for (auto* daemon : {slurmd_.get(), slurmctld_.get(), munged_.get()})
      if (daemon != nullptr)
        daemon->stop(std::chrono::seconds(10));
  }
  slurm_cluster(const slurm_cluster&) = delete;
  slurm_cluster& operator=(const slurm_cluster&) = delete;

  [[nodiscard]] bool up() const { return up_; }
  [[nodiscard]] const std::string& why_not() const { return why_not_; }

  /// What a SLURM command needs to find this cluster.
  [[nodiscard]] std::map<std::string, std::string> env() const {
    return {{"SLURM_CONF", (dir_ / "slurm.conf").string()}};
  }

  /// `sbatch SCRIPT` with `vars` in its environment (sbatch passes them on to the job), its
  /// output to `output`; the job's id.
  std::string submit(const std::filesystem::path& script, std::map<std::string, std::string> vars,
                     const std::filesystem::path& output) {
    for (const auto& [k, v] : env())
      vars[k] = v;
    auto r = run_command({"/usr/bin/sbatch", "--parsable", "--output", output.string(), script.string()}, vars, limit);
    if (r.code != 0)
      throw std::runtime_error("sbatch failed: " + r.err);
    return r.out.substr(0, r.out.find_first_of(";\n"));
  }

  /// The job's state as squeue says it (RUNNING, PENDING, COMPLETING...); empty once it has left.
  std::string state(const std::string& job) {
    auto out = tool({"/usr/bin/squeue", "-h", "-j", job, "-o", "%T"}).out;
    return out.substr(0, out.find('\n'));
  }

  void cancel(const std::string& job) {
    auto r = tool({"/usr/bin/scancel", job});
    if (r.code != 0)
      throw std::runtime_error("scancel " + job + " failed: " + r.err);
  }

private:
  std::filesystem::path socket() const { return dir_ / "run" / "munge.socket"; }

  finished_command tool(std::vector<std::string> argv) { return run_command(argv, env(), limit); }

  /// How long a SLURM command may take.
  static constexpr std::chrono::seconds limit{60};

  static int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0
        || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("no free port on 127.0.0.1");
    ::close(fd);
    return ntohs(a.sin_port);
  }

  void write_conf() {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    auto cpus = std::max(1u, std::thread::hardware_concurrency());
    auto d = [&](const char* sub) { return (dir_ / sub).string(); };
    std::ofstream conf{dir_ / "slurm.conf"};
    conf << "ClusterName=cduitest\nSlurmctldHost=localhost(127.0.0.1)\n"
         << "SlurmctldPort=" << free_port() << "\nSlurmdPort=" << free_port() << "\n"
         << "SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\n"
         << "AuthInfo=socket=" << socket().string() << "\n"
         << "StateSaveLocation=" << d("state") << "\nSlurmdSpoolDir=" << d("spool") << "\n"
         << "SlurmctldPidFile=" << d("run") << "/slurmctld.pid\nSlurmdPidFile=" << d("run") << "/slurmd.pid\n"
         << "SlurmctldLogFile=" << d("log") << "/slurmctld.log\nSlurmdLogFile=" << d("log") << "/slurmd.log\n"
         << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSchedulerType=sched/builtin\n"
         << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\nMpiDefault=none\n"
         << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
         << "KillWait=5\n"
         << "NodeName=" << node << " NodeHostname=" << host << " NodeAddr=127.0.0.1 CPUs=" << cpus
         << " RealMemory=1000 State=UNKNOWN\n"
         << "PartitionName=test Nodes=" << node << " Default=YES MaxTime=INFINITE State=UP\n";
  }

  std::filesystem::path dir_;
  std::unique_ptr<process> munged_;
  std::unique_ptr<process> slurmctld_;
  std::unique_ptr<process> slurmd_;
  bool up_ = false;
  std::string why_not_;
};

} // namespace cdui::test
