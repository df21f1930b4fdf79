#pragma once

namespace cdui {

/// cdui's version ("0.1.0"): what `cdui --version` prints and what a worker's hello must match.
[[nodiscard]] const char* version();

} // namespace cdui
