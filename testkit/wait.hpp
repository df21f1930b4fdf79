#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace cdui::test {

/// Waits for `ready` to hold, checking every 10 ms, for `limit` at most; whether it held. For a
/// condition that no event announces (a process that appears, a thread that ends).
inline bool eventually(const std::function<bool()>& ready,
                       std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

} // namespace cdui::test
