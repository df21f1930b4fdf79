#include "apps/dashboard_files.hpp"

#include <map>
#include <string>

namespace cdui::apps {

namespace {

/// The files by their path, built once from the generated table.
const std::map<std::string_view, dashboard_file>& files_by_path() {
  static const auto files = [] {
    std::map<std::string_view, dashboard_file> by_path;
    for (std::size_t i = 0; i < detail::embedded_file_count; ++i) {
      const auto& f = detail::embedded_files[i];
      std::string_view path{f.path};
      by_path[path] = {path, {reinterpret_cast<const char*>(f.data), f.size}, content_type_of(path)};
    }
    return by_path;
  }();
  return files;
}

} // namespace

std::string_view content_type_of(std::string_view name) {
  static const std::map<std::string_view, std::string_view> types{
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"}};
  auto dot = name.rfind('.');
  auto slash = name.rfind('/');
  if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash))
    if (auto type = types.find(name.substr(dot)); type != types.end())
      return type->second;
  return "application/octet-stream";
}

const dashboard_file* find_dashboard_file(std::string_view path) {
  if (path == "/")
    path = "/ui/index.html";
  const auto& files = files_by_path();
  auto found = files.find(path);
  return found == files.end() ? nullptr : &found->second;
}

} // namespace cdui::apps
