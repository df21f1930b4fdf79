#pragma once

#include <filesystem>
#include <string>

namespace cdui::actors {

/// A CURVE key pair, each key in Z85 (40 characters).
struct curve_keys {
  std::string public_key;
  std::string secret_key;
};

/// A fresh key pair (an agent makes one per process).
[[nodiscard]] curve_keys make_curve_keys();

/// The server's key pair, kept in `file` (0600) so that enrollment commands stay valid across
/// restarts; created on first use. Throws std::runtime_error naming the file when it cannot.
[[nodiscard]] curve_keys load_or_create_curve_keys(const std::filesystem::path& file);

/// Whether `key` is a CURVE key in Z85 (40 characters that decode to 32 bytes).
[[nodiscard]] bool is_curve_key(const std::string& key);

} // namespace cdui::actors
