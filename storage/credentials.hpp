#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace cdui::storage {

/// 64 hex digits of 32 bytes from libsodium's CSPRNG: a session token, a dashboard's sign-in code
/// or cookie.
[[nodiscard]] std::string random_secret();

/// A new enrollment credential for a remote worker: "cdui-wk-" and a random_secret(). The server
/// keeps only its hash.
[[nodiscard]] std::string new_credential();

/// The SHA-256 of a credential, in hex: what cdui.db keeps of it.
[[nodiscard]] std::string credential_hash(std::string_view credential);

/// Whether two secrets are equal, in time that depends on their lengths only.
[[nodiscard]] bool same_secret(std::string_view a, std::string_view b);

/// `value` behind an HMAC-SHA256 tag over `key` and `value`, under a key derived from `secret`: what
/// a rank writes at the DDP rendezvous (docs/ddp.md) so that a process without the run's secret
/// cannot write there unnoticed. `key` and `value` may hold any bytes.
[[nodiscard]] std::string signed_value(std::string_view secret, std::string_view key, std::string_view value);

/// The value that signed_value(`secret`, `key`, value) made `stored` from; nullopt when `stored` is
/// shorter than a tag or its tag is not that of `key` and the rest under `secret` (compared in
/// constant time).
[[nodiscard]] std::optional<std::string> verified_value(std::string_view secret, std::string_view key,
                                                        std::string_view stored);

/// Writes `text` to `path` in a file only its owner can read (0600 from its creation: there is no
/// moment when another user could read it), atomically (temp name, then rename). Throws
/// std::runtime_error naming the file when it cannot.
void write_private_file(const std::filesystem::path& path, std::string_view text);

/// The first line of a file; nullopt when it is missing, unreadable or its first line is empty.
[[nodiscard]] std::optional<std::string> read_first_line(const std::filesystem::path& path);

} // namespace cdui::storage
