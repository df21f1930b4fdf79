#pragma once

// The command line comes as two binaries (docs/architecture.md, "Two binaries"): `cdui`, without
// libtorch, which answers the commands that need none at once (--version, validate, estimate,
// runs, show, status, ...), and `cdui-runtime`, the whole command line with libtorch, which `cdui`
// becomes (execv, the same pid and arguments) for the commands that train or run the server.

namespace cdui::apps {

/// Notes the process's arguments, for runtime_exec.
void remember_command_line(int argc, char** argv);

/// Replaces this process with cdui-runtime on the same arguments: beside this binary (a build
/// folder), else where `cmake --install` puts it (CDUI_RUNTIME_RELATIVE from the binary's folder).
/// Returns only when that fails, with the exit code after saying why.
[[nodiscard]] int exec_runtime();

} // namespace cdui::apps
