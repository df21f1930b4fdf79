#pragma once

#include <string>

namespace cdui::actors {

/// This machine's address on its way to the host of `endpoint` (tcp://HOST:PORT): the source
/// address the kernel picks to reach it, found without sending anything. An agent's join address,
/// where the other workers of a DDP run reach its ranks' store (docs/ddp.md). Empty when it cannot
/// tell (a host that does not resolve, no route).
[[nodiscard]] std::string address_toward(const std::string& endpoint);

} // namespace cdui::actors
