#pragma once

namespace cdui::apps {

/// `cdui ui`: prints the dashboard's address and a one-time link that signs a browser in
/// (docs/dashboard.md); with `open`, opens the link with xdg-open, or says why it cannot.
[[nodiscard]] int ui_command(bool open);

} // namespace cdui::apps
