// The cdui command line: run, validate, fit, estimate, devices, the server (start, stop, status)
// and its client commands (runs, show, logs, follow, cancel, ui).
#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/cli_workers.hpp"
#include "apps/client_commands.hpp"
#include "apps/estimate_command.hpp"
#include "apps/fit_command.hpp"
#include "apps/exec_command.hpp"
#include "apps/inspect_commands.hpp"
#include "apps/process_exit.hpp"
#include "apps/http_settings.hpp"
#include "apps/run_command.hpp"
#include "apps/runtime_exec.hpp"
#include "apps/server_command.hpp"
#include "apps/sweep_command.hpp"
#include "apps/ui_command.hpp"
#include "apps/sim_hold_command.hpp"
#include "messages/run_request.hpp"
#include "runtime/malloc_thresholds.hpp"
#include "messages/version.hpp"

namespace {

/// The subcommand being parsed when the command line went wrong: the deepest one named.
const CLI::App* deepest(const CLI::App* app) {
  auto subs = app->get_subcommands();
  return subs.empty() ? app : deepest(subs.back());
}

/// "cdui", "cdui runs", "cdui agent start".
std::string command_path(const CLI::App* app) {
  auto parent = app->get_parent();
  return parent ? command_path(parent) + " " + app->get_name() : std::string{"cdui"};
}

/// What a person is told about a command line CLI11 refused, in the CLI's words: the word it did
/// not know and where to read what it knows.
std::string usage_error(const CLI::App& app, const CLI::ParseError& e) {
  const auto* at = deepest(&app);
  auto help = "; see " + command_path(at) + " --help";
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    auto extras = app.remaining(true);
    auto word = extras.empty() ? std::string{"?"} : extras.front();
    if (at == &app && !word.empty() && word.front() != '-')
      return "cdui: unknown command '" + word + "'" + help;
    return "cdui: unknown argument '" + word + "' for " + command_path(at) + help;
  }
  std::string what = e.what();
  if (!what.empty())
    what.front() = static_cast<char>(std::tolower(static_cast<unsigned char>(what.front())));
  return command_path(at) + ": " + what + help;
}

/// The command line's command, run: its exit code.
int run_cli(int argc, char** argv) {
  using namespace cdui::apps;
  CLI::App app{"cdui: queue, admit and train deep-learning runs on per-device slots"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string{"cdui "} + cdui::version());

  run_command_options run_opts;
  std::uint64_t seed = 0;
  auto* run = app.add_subcommand(
    "run", "train a graph: on the running server, else on the embedded runtime");
  run->add_option("graph", run_opts.graph_file, "the graph JSON file")->required();
  run->add_option("--device", run_opts.device,
                  "the run's device: cpu, auto, cuda, cuda:N, mps, mps:N, sim, sim:N");
  auto* seed_opt = run->add_option("--seed", seed, "seed every random number generator (0..2^32-1)")
                     ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{4294967295ULL}));
  run->add_option("--name", run_opts.name, "a name for the run (64 characters at most)")
    ->check([](const std::string& s) {
      return s.size() <= 64 ? std::string{} : std::string{"a name has 64 characters at most"};
    });
  run->add_option("--target", run_opts.target,
                  "where the run executes: local (this server, the default), a worker's name, any "
                  "(the first worker with a free slot, this server last) or pool:one-shot (a "
                  "one-shot worker)");
  run->add_option("--devices", run_opts.devices,
                  "a device set, e.g. sim:0,sim:1 (a worker's own names with --target; across workers "
                  "WORKER/DEVICE, e.g. w1/cuda:0,w2/cuda:0)")
    ->delimiter(',');
  auto* memory_gib_opt =
    run->add_option("--memory-gib", run_opts.memory_gib,
                    "the run's memory budget per card in GiB (target.memory_gib): it runs out of "
                    "memory alone past it; a card shared by memory admits it by it")
      ->check(CLI::Range(1e-6, cdui::max_memory_gib));
  run->add_option("--memory", run_opts.memory,
                  "the same budget as a size: 64M, 64MiB, 1.5G, 2GiB (M, G: MiB, GiB)")
    ->excludes(memory_gib_opt);
  run->add_option("--resume", run_opts.resume,
                  "continue from a TrainingLoop checkpoint: its file, or a run's folder (its newest "
                  "checkpoint of each loop); the run's seed should be the interrupted run's");
  run->add_option("--set", run_opts.overrides,
                  "set a node's param, NODE.PARAM=VALUE (repeatable), e.g. loader.batch_size=512; "
                  "VALUE is read as JSON when it is JSON, else as a string")
    ->allow_extra_args(false);
  run->add_flag("--deterministic", run_opts.deterministic,
                "ask libtorch for deterministic algorithms");
  run->add_flag("--record-outputs", run_opts.record_outputs,
                "keep every node's outputs in the run output store (GET /api/runs/ID/outputs)");
  auto* wait_flag = run->add_flag("--wait", "follow the run until it ends (the default)");
  run->add_flag("--detach", run_opts.detach, "submit to the server and exit at once")
    ->excludes(wait_flag);
  double run_timeout = 0;
  auto* timeout_opt =
    run->add_option("--timeout", run_timeout,
                    "stop waiting after S seconds (a server's run continues; embedded, it is "
                    "cancelled)")
      ->check(CLI::PositiveNumber);

  std::string sim_devices;
  for (auto* command : {run})
    command->add_option("--sim-devices", sim_devices,
                        "simulated accelerators, e.g. 2x8GiB (default: $CODEFYUI_SIM_DEVICES)");

  std::filesystem::path validate_file;
  auto* validate = app.add_subcommand("validate", "check a graph without running it");
  validate->add_option("graph", validate_file, "the graph JSON file")->required();

  fit_options fit_opts;
  auto* fit = app.add_subcommand(
    "fit", "find the largest batch_size whose training step fits under a memory budget");
  fit->add_option("graph", fit_opts.graph_file, "the graph JSON file")->required();
  fit->add_option("--memory", fit_opts.memory, "the memory budget, e.g. 2GiB (the card the probes run on)");
  fit->add_flag("--throughput", fit_opts.throughput,
                "also measure samples/s at each batch size that fits (without --memory: at 1, 2, 4, ... up to the graph's batch)");
  fit->add_flag("--ladder", fit_opts.ladder,
                "the recovery ladder: the graph's batch size, halved on each out-of-memory error");

  estimate_command_options estimate_opts;
  auto* estimate = app.add_subcommand(
    "estimate", "the static memory estimate of a graph's training run, term by term, or of a model "
                "known by its parameter count (--parameters)");
  estimate->add_option("graph", estimate_opts.graph_file, "the graph JSON file");
  estimate->add_option("--cards", estimate_opts.cards,
                       "the cards of a device set the run would take (the figure is per card)")
    ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
  estimate->add_option("--device", estimate_opts.device,
                       "estimate for this device instead of the TrainingLoop's (cuda adds the CUDA "
                       "terms)");
  estimate->add_flag("--json", estimate_opts.json, "print the JSON POST /api/estimate answers");
  // The estimate from a parameter count: each flag given goes to the estimator as its API field.
  std::map<std::string, std::string> parameter_values;
  std::vector<std::pair<CLI::Option*, std::string>> parameter_flags;
  for (const auto& [flag, field, help] : std::vector<std::tuple<std::string, std::string, std::string>>{
         {"--parameters", "parameters",
          "estimate a model of N parameters instead of a graph: 7e9, 7000000000 or 7B"},
         {"--precision", "precision",
          "with --parameters: the format of the weights and gradients: fp32 (default), bf16, fp16"},
         {"--optimizer", "optimizer",
          "with --parameters: adamw (default), adam, sgd, sgd_momentum, rmsprop, rmsprop_momentum, "
          "adam8bit"},
         {"--trainable", "trainable",
          "with --parameters: the share trained, in (0, 1] (default 1; LoRA: 0.002 or 0.2%)"},
         {"--state-precision", "state_precision",
          "with --parameters: the format of the optimizer's copies: fp32 (default), bf16, fp16"}})
    parameter_flags.emplace_back(estimate->add_option(flag, parameter_values[field], help), field);

  auto* devices = app.add_subcommand("devices", "list the devices this host offers");
  devices->add_option("--sim-devices", sim_devices,
                      "simulated accelerators, e.g. 2x8GiB (default: $CODEFYUI_SIM_DEVICES)");

  start_options start_opts;
  auto* start = app.add_subcommand("start", "start the server (in the background unless --foreground)");
  start->add_option("--host", start_opts.host, "the address to listen on (default 127.0.0.1)");
  start->add_option("--port", start_opts.port, "the HTTP port (default 8765; 0: any free port)")
    ->check(CLI::Range(0, 65535));
  start->add_option("--zmq-port", start_opts.zmq_port,
                    "the port agents connect to, on --host (default: the HTTP port + 1; with "
                    "--port 0, any free port); encrypted (CURVE) unless --host is loopback")
    ->check(CLI::Range(-1, 65535));
  std::size_t max_body_mb = 0;
  auto* max_body_opt = start->add_option("--max-body-mb", max_body_mb,
                    "the largest request body the HTTP API takes, in MiB (default: "
                    "$CODEFYUI_HTTP_MAX_BODY_MB, else 16); a larger one gets 413")
    ->check(CLI::Range(std::size_t{1}, max_body_mb_limit));
  start->add_flag("--foreground", start_opts.foreground, "stay attached; log to the terminal too");
  start->add_option("--isolation", start_opts.isolation,
                    "where queued runs execute: thread (in the server's process, the default) or "
                    "process (a process each: a crash ends that run only; "
                    "default $CODEFYUI_ISOLATION)")
    ->check(CLI::IsMember({"thread", "process"}));
  start->add_option("--sim-devices", sim_devices,
                    "simulated accelerators, e.g. 2x8GiB (default: $CODEFYUI_SIM_DEVICES)");

  int stop_timeout = 120;
  auto* stop = app.add_subcommand("stop", "stop the server gracefully");
  stop->add_option("--timeout", stop_timeout, "seconds to wait for it to stop (default 120)")
    ->check(CLI::PositiveNumber);
  auto* status = app.add_subcommand("status", "whether a server runs on this home, and its queues");

  runs_options runs_opts;
  auto* runs = app.add_subcommand("runs", "list the newest runs of this home");
  runs->add_option("--status", runs_opts.status,
                   "only runs of this status: queued, running, succeeded, failed, cancelled, "
                   "interrupted, pruned");
  runs->add_option("--limit", runs_opts.limit, "how many runs (default 20)")
    ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
  runs->add_flag("--wide", runs_opts.wide, "whole names and reasons, and when runs started and ended");
  runs->add_flag("--json", runs_opts.json, "the run objects as JSON, for scripts");

  std::string run_word;
  const char* run_word_help = "the run: its id, a unique prefix of its id, or its name";
  bool show_json = false;
  auto* show = app.add_subcommand(
    "show", "one run: status, why it waits or failed, device and worker, budget, times, metrics");
  show->add_option("run", run_word, run_word_help)->required();
  show->add_flag("--json", show_json, "the run object as JSON");
  bool logs_follow = false;
  auto* logs = app.add_subcommand("logs", "a run's output log (its output.log)");
  logs->add_option("run", run_word, run_word_help)->required();
  logs->add_flag("-f,--follow", logs_follow, "keep printing lines as they come, until the run ends");
  auto* follow = app.add_subcommand(
    "follow", "watch a submitted run's progress, as `cdui run` shows it, until it ends");
  follow->add_option("run", run_word, run_word_help)->required();

  // agent start|stop|list and workers [enroll|rekey|remove|drain|undrain|share|exclusive]
  // (cli_workers.cpp).
  worker_commands worker_cli;
  worker_cli.add_to(app, sim_devices);

  std::filesystem::path exec_dir;
  auto* exec = app.add_subcommand("exec", "execute one run an agent prepared (the agent starts it)");
  exec->add_option("rundir", exec_dir, "the run's folder on the worker")->required();
  bool exec_pipe = false;
  exec->add_flag("--pipe", exec_pipe, "events to stdout, for a server with --isolation process");
  int exec_rank = 0;
  int exec_world = 1;
  exec->add_option("--rank", exec_rank, "this process's DDP rank")->check(CLI::NonNegativeNumber);
  exec->add_option("--world-size", exec_world, "the run's DDP ranks")->check(CLI::PositiveNumber);
  exec->group("");  // not for people: hidden from the help

  std::string hold_uuid, hold_size;
  auto* sim_hold = app.add_subcommand(
    "sim-hold", "take memory on a sim card from outside cdui's runs until SIGTERM (for tests)");
  sim_hold->add_option("uuid", hold_uuid, "the card's UUID, e.g. SIM-box-A-0")->required();
  sim_hold->add_option("size", hold_size, "how much, e.g. 512MiB")->required();
  sim_hold->group("");  // not for people: hidden from the help

  std::vector<std::string> cancel_words;
  auto* cancel = app.add_subcommand("cancel", "cancel queued or running runs on the server");
  cancel->add_option("runs", cancel_words,
                     "the runs: each by its id, a unique prefix of its id, or its name")
    ->required();

  sweep_command_options sweep_opts;
  auto* sweep = app.add_subcommand("sweep", "run a grid or random sweep of a graph's params on the server, "
                                            "ranked by an objective");
  sweep->add_option("graph", sweep_opts.graph_file, "the graph JSON file")->required();
  sweep->add_option("spec", sweep_opts.spec_file,
                    "the sweep JSON file: {spec, objective, options?, name?} (docs/http-api.md)")
    ->required();
  sweep->add_option("--name", sweep_opts.name, "the sweep's name (default: the graph file's name)");
  sweep->add_flag("--detach", sweep_opts.detach, "submit and return; the sweep goes on");
  sweep_command_options study_opts;
  auto* study = app.add_subcommand("study", "run an adaptive search (TPE or random, with median or ASHA pruning) "
                                            "of a graph's params on the server, printing its live trials");
  study->add_option("graph", study_opts.graph_file, "the graph JSON file")->required();
  study->add_option("spec", study_opts.spec_file,
                    "the study JSON file: {space, objective, budget, sampler?, pruner?, seed?, options?, name?} "
                    "(docs/http-api.md)")
    ->required();
  study->add_option("--name", study_opts.name, "the study's name (default: the graph file's name)");
  study->add_flag("--detach", study_opts.detach, "submit and return; the study goes on");

  bool ui_open = false;
  auto* ui = app.add_subcommand("ui", "print the dashboard's address and a one-time link that signs "
                                      "a browser in");
  ui->add_flag("--open", ui_open, "open the link with xdg-open");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0)
      return app.exit(e);  // --help, --version
    std::fprintf(stderr, "%s\n", usage_error(app, e).c_str());
    return exit_usage;
  }
  if (!sim_devices.empty())
    ::setenv("CODEFYUI_SIM_DEVICES", sim_devices.c_str(), 1);
  if (*run) {
    if (*seed_opt)
      run_opts.seed = seed;
    if (*timeout_opt)
      run_opts.timeout_s = run_timeout;
    return run_command(run_opts);
  }
  if (*validate)
    return validate_command(validate_file);
  if (*devices)
    return devices_command();
  if (*fit)
    return fit_command(fit_opts);
  if (*estimate) {
    for (const auto& [option, field] : parameter_flags)
      if (*option)
        estimate_opts.parameter_flags[field] = parameter_values[field];
    return estimate_command(estimate_opts);
  }
  if (*start) {
    if (*max_body_opt)
      start_opts.max_body_mb = max_body_mb;
    return start_command(start_opts);
  }
  if (*stop)
    return stop_command(stop_timeout);
  if (*status)
    return status_command();
  if (*runs)
    return runs_command(runs_opts);
  if (*cancel)
    return cancel_command(cancel_words);
  if (*sweep)
    return sweep_command(sweep_opts);
  if (*ui)
    return ui_command(ui_open);
  if (*study)
    return study_command(study_opts);
  if (*show)
    return show_command(run_word, show_json);
  if (*logs)
    return logs_command(run_word, logs_follow);
  if (*follow)
    return follow_command(run_word);
  if (auto code = worker_cli.run())
    return *code;
  if (*exec)
    return exec_command(exec_dir, exec_pipe, exec_rank, exec_world);
  if (*sim_hold)
    return sim_hold_command(hold_uuid, hold_size);
  std::fputs(app.help().c_str(), stdout);
  return exit_usage;
}

} // namespace

int main(int argc, char** argv) {
  cdui::runtime::set_malloc_thresholds();
  cdui::apps::remember_command_line(argc, argv);
  cdui::apps::exit_after_command(run_cli(argc, argv));
}
