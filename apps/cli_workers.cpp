// The command line's worker commands: `cdui agent start|stop|list` and `cdui workers` with its
// subcommands (docs/cli.md), added to main.cpp's app.
#include "apps/cli_workers.hpp"

#include <tuple>

#include "apps/client_commands.hpp"

namespace cdui::apps {

void worker_commands::add_to(CLI::App& app, std::string& sim_devices) {
  auto* agent = app.add_subcommand("agent", "a worker agent that joins the server over ZeroMQ");
  agent->require_subcommand(1);
  agent_start = agent->add_subcommand("start", "start an agent (in the background unless --foreground)");
  agent_start->add_option("--name", agent_opts.name, "the worker's name (default: the hostname)");
  agent_start->add_option("--devices", agent_opts.devices,
                          "the devices to offer besides the CPU, e.g. cuda:0,cuda:1 (default: all)")
    ->delimiter(',');
  agent_start->add_option("--sim-devices", sim_devices,
                          "simulated accelerators to offer, e.g. 2x8GiB (default: $CODEFYUI_SIM_DEVICES)");
  agent_start->add_flag("--foreground", agent_opts.foreground, "stay attached; log to the terminal too");
  agent_start->add_flag("--one-shot", agent_opts.one_shot, "exit when its single run ends");
  agent_start->add_flag("--ephemeral", agent_opts.ephemeral,
                        "its machine leaves with it (a SLURM allocation, a pod): when it stops, its "
                        "runs end interrupted and their processes are killed");
  agent_start->add_option("--server", agent_opts.server,
                          "a remote server's agents' endpoint, tcp://HOST:PORT (default: the server "
                          "of this home)");
  agent_start->add_option("--credential", agent_opts.credential_file,
                          "the file with the credential `cdui workers enroll` gave (default: "
                          "this home's session token)");
  agent_start->add_option("--server-key", agent_opts.server_key,
                          "the server's CURVE public key, from the enrollment command (default: "
                          "server.json's)");
  agent_start->add_option("--rendezvous-host", agent_opts.rendezvous_host,
                          "where a DDP run's rank 0 on this worker hosts the ranks' store, an address "
                          "the other workers reach (default: 127.0.0.1 with a server on this machine, "
                          "else the hostname)");
  agent_stop = agent->add_subcommand(
    "stop", "stop an agent of this home (without a name: the only one running)");
  auto* stop_positional =
    agent_stop->add_option("name", agent_stop_name, "the agent's name (cdui agent list)");
  agent_stop->add_option("--name", agent_stop_name, "the agent's name, as the positional one")
    ->excludes(stop_positional);
  agent_stop->add_option("--timeout", agent_stop_timeout, "seconds to wait (default 60)")
    ->check(CLI::PositiveNumber);
  agent_list = agent->add_subcommand("list", "the agents running on this home (name, pid, "
                                                   "since, server)");
  workers = app.add_subcommand("workers", "the server's workers, their devices and status");
  for (auto [verb, action, help] :
       {std::tuple{"enroll", worker_action::enroll, "enroll a worker on another machine: prints the command to run there"},
        std::tuple{"rekey", worker_action::rekey, "give an enrolled worker a new credential: prints the new command"},
        std::tuple{"remove", worker_action::remove, "revoke a worker, disconnect it and fail its runs"},
        std::tuple{"drain", worker_action::drain, "no new runs on a worker; its running runs finish"},
        std::tuple{"undrain", worker_action::undrain, "a drained worker takes runs again"},
        std::tuple{"share", worker_action::share, "share a worker's card by memory: runs declare budgets"},
        std::tuple{"exclusive", worker_action::exclusive, "a worker's card takes one run at a time again"}}) {
    auto* sub = workers->add_subcommand(verb, help);
    bool fleets = action == worker_action::enroll || action == worker_action::rekey || action == worker_action::remove;
    sub->add_option("name", worker_name, fleets ? "the worker's name, or a fleet's 'PREFIX*'" : "the worker's name")
      ->required();
    if (action == worker_action::share || action == worker_action::exclusive)
      sub->add_option("device", worker_device, "the worker's device, e.g. sim:0 or cuda:1")->required();
    if (action == worker_action::enroll || action == worker_action::rekey)
      sub->add_option("--server-host", server_host,
                      "the host the worker's machine reaches this server by (default: the one this "
                      "command used)");
    worker_actions.emplace_back(sub, action);
  }
}

std::optional<int> worker_commands::run() const {
  for (const auto& [sub, action] : worker_actions)
    if (*sub)
      return worker_action_command(action, worker_name, server_host, worker_device);
  if (*agent_start)
    return agent_start_command(agent_opts);
  if (*agent_stop)
    return agent_stop_command(agent_stop_name, agent_stop_timeout);
  if (*agent_list)
    return agent_list_command();
  if (*workers)
    return workers_command();
  return std::nullopt;
}

} // namespace cdui::apps
