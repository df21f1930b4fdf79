#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "apps/run_command.hpp"
#include "apps/runtime_exec.hpp"

namespace cdui::apps {

namespace {

std::vector<char*> arguments;

} // namespace

void remember_command_line(int argc, char** argv) {
  arguments.assign(argv, argv + argc);
  arguments.push_back(nullptr);
}

int exec_runtime() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  auto folder = self.parent_path();
  std::vector<std::filesystem::path> candidates{folder / "cdui-runtime",
                                                (folder / CDUI_RUNTIME_RELATIVE).lexically_normal()};
  int error = ENOENT;
  for (const auto& binary : candidates) {
    if (::access(binary.c_str(), X_OK) != 0)
      continue;
    auto args = arguments;
    std::string program = binary.string();
    // OpenMP's idle threads sleep instead of spinning, unless the user says otherwise: a spinning
    // intra-op thread takes a core from the run beside it (two 2-thread runs on 2 cores: 5.6 times
    // slower each; docs/benchmarks.md, "Intra-op threads"). Read by libgomp as it loads, so here,
    // before the runtime binary (and every run process it starts) loads it.
    ::setenv("OMP_WAIT_POLICY", "passive", 0);
    args.front() = program.data();
    ::execv(program.c_str(), args.data());
    error = errno;
  }
  std::fprintf(stderr, "cdui: cannot start cdui-runtime, which trains and serves (looked for %s and %s): %s\n",
               candidates[0].c_str(), candidates[1].c_str(), std::strerror(error));
  return exit_run_failed;
}

} // namespace cdui::apps
