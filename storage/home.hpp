#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace cdui::storage {

/// $CODEFYUI_HOME, else ~/.cdui: where runs, the store and the server's files live.
[[nodiscard]] std::filesystem::path default_home();

/// The home's own files. Only the user that runs cdui may read or write them (mode 0600), and no
/// run's node reads or writes them (runtime/file_access.hpp).
inline constexpr const char* private_home_files[] = {
  "cdui.db",      "cdui.db-wal", "cdui.db-shm",  "session.token",
  "server.json",  "server.curve", "server.log", "server.lock"};

/// Creates `folder` and the missing folders above it, each new one with mode 0700.
/// Throws std::runtime_error naming the folder when it cannot.
void create_private_folders(const std::filesystem::path& folder);

/// Makes `home` ready and private: creates it with mode 0700; a home that exists, belongs to this
/// user and lets others in (0755 from an earlier cdui) gets 0700, unless it is a shared folder with
/// the sticky bit such as /tmp (left as it is); and its own files that exist and belong to this
/// user get 0600 (private_home_files). Throws std::runtime_error naming the home when it cannot
/// create it or it is not a folder.
void prepare_home(const std::filesystem::path& home);

/// Gives an existing regular file of this user mode 0600 if it had more (a link is left alone).
void make_private(const std::filesystem::path& file);

/// Writes `bytes` to a temporary name beside `path` and renames it over `path`, so a reader sees
/// the old file or the new one, never half of one. A `private_file` gets mode 0600 whatever the
/// umask and is on the disk before the rename; another gets 0666 less the umask, as any new file.
/// Throws std::runtime_error naming the path and the cause (io_error_text) on failure, the
/// temporary file removed.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, bool private_file = false);

/// What a failed file operation's errno means, for a message: "the disk is full (No space left on
/// device)" when it is (ENOSPC, or a quota's EDQUOT), else strerror's sentence.
[[nodiscard]] std::string io_error_text(int error);

} // namespace cdui::storage
