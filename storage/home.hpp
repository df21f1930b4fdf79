#pragma once

#include <filesystem>
#include <string_view>

namespace cdui::storage {

/// $CODEFYUI_HOME, else ~/.cdui: where runs, the store and the server's files live.
[[nodiscard]] std::filesystem::path default_home();

/// Writes `bytes` to a temporary name beside `path`, flushes it and renames it over `path`, so a
/// reader sees the old file or the new one, never half of one. Throws std::runtime_error naming
/// the path on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

} // namespace cdui::storage
