// The cdui command line: run, validate, devices.
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "apps/run_command.hpp"

int main(int argc, char** argv) {
  using namespace cdui::apps;
  CLI::App app{"cdui: queue, admit and train deep-learning runs on per-device slots"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string{"cdui "} + CDUI_VERSION);

  run_command_options run_opts;
  std::uint64_t seed = 0;
  auto* run = app.add_subcommand("run", "train a graph on the embedded runtime");
  run->add_option("graph", run_opts.graph_file, "the graph JSON file")->required();
  run->add_option("--device", run_opts.device,
                  "the run's device: cpu, auto, cuda, cuda:N, mps, mps:N, sim, sim:N");
  auto* seed_opt = run->add_option("--seed", seed, "seed every random number generator (0..2^32-1)")
                     ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{4294967295ULL}));
  run->add_option("--name", run_opts.name, "a name for the run (64 characters at most)")
    ->check([](const std::string& s) {
      return s.size() <= 64 ? std::string{} : std::string{"a name has 64 characters at most"};
    });

  std::string sim_devices;
  for (auto* command : {run})
    command->add_option("--sim-devices", sim_devices,
                        "simulated accelerators, e.g. 2x8GiB (default: $CODEFYUI_SIM_DEVICES)");

  std::filesystem::path validate_file;
  auto* validate = app.add_subcommand("validate", "check a graph without running it");
  validate->add_option("graph", validate_file, "the graph JSON file")->required();

  std::filesystem::path fit_file;
  std::string fit_memory;
  auto* fit = app.add_subcommand(
    "fit", "find the largest batch_size whose training step fits under a memory budget");
  fit->add_option("graph", fit_file, "the graph JSON file")->required();
  fit->add_option("--memory", fit_memory, "the memory budget, e.g. 2GiB")->required();

  auto* devices = app.add_subcommand("devices", "list the devices this host offers");
  devices->add_option("--sim-devices", sim_devices,
                      "simulated accelerators, e.g. 2x8GiB (default: $CODEFYUI_SIM_DEVICES)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code() == 0 ? app.exit(e) : (app.exit(e), exit_usage);
  }
  if (!sim_devices.empty())
    ::setenv("CODEFYUI_SIM_DEVICES", sim_devices.c_str(), 1);
  if (*run) {
    if (*seed_opt)
      run_opts.seed = seed;
    return run_command(run_opts);
  }
  if (*validate)
    return validate_command(validate_file);
  if (*devices)
    return devices_command();
  if (*fit)
    return fit_command(fit_file, fit_memory);
  std::fputs(app.help().c_str(), stdout);
  return exit_usage;
}
