#pragma once

#include <cstddef>
#include <string_view>

namespace cdui::apps {

/// One file of the dashboard's page, compiled into the binary (cmake/embed_files.cmake).
struct dashboard_file {
  std::string_view path;  // "/ui/app.js"
  std::string_view bytes;
  std::string_view content_type;
};

/// The file served at `path`: `/` is /ui/index.html; nullptr when there is none.
[[nodiscard]] const dashboard_file* find_dashboard_file(std::string_view path);

/// The Content-Type of a file by its name's extension; application/octet-stream for an unknown one.
[[nodiscard]] std::string_view content_type_of(std::string_view name);

/// The dashboard's Content-Security-Policy: scripts, styles and requests from this server only, no
/// inline script or style, no frames, nothing from another site.
inline constexpr const char* dashboard_csp =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

namespace detail {
/// What the generated source holds, in cmake/embed_files.cmake's words.
struct embedded_file {
  const char* path;
  const unsigned char* data;
  std::size_t size;
};
extern const embedded_file embedded_files[];
extern const std::size_t embedded_file_count;
} // namespace detail

} // namespace cdui::apps
