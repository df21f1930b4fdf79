// In `cdui`, the front binary without libtorch: the commands that train or serve become
// cdui-runtime (apps/runtime_exec.hpp). cdui-runtime links the real ones instead of this file.
#include "apps/agent_command.hpp"
#include "apps/exec_command.hpp"
#include "apps/fit_command.hpp"
#include "apps/run_command.hpp"
#include "apps/runtime_exec.hpp"
#include "apps/server_command.hpp"
#include "apps/sim_hold_command.hpp"

namespace cdui::apps {

int run_command(const run_command_options&) { return exec_runtime(); }
int fit_command(const fit_options&) { return exec_runtime(); }
int devices_command() { return exec_runtime(); }
int start_command(const start_options&) { return exec_runtime(); }
int agent_start_command(const agent_options&) { return exec_runtime(); }
int exec_command(const std::filesystem::path&, bool, int, int) { return exec_runtime(); }
int sim_hold_command(const std::string&, const std::string&) { return exec_runtime(); }

} // namespace cdui::apps
