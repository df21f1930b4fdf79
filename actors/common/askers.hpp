#pragma once
// How threads outside the actor system (the facade's callers: HTTP handlers, the command line, an
// embedding service) ask an actor and wait for its answer: within a deadline, with the answer or
// an api_error that says which part did not answer or why it refused.

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/duration.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/common/api_errors.hpp"
#include "messages/api_error.hpp"

namespace cdui::actors {

/// "30 s", "0.05 s": a deadline as a sentence says it.
inline std::string seconds_said(caf::duration timeout) {
  std::chrono::steady_clock::time_point end{};
  if (!timeout.valid())
    return "any time";
  end += timeout;
  char text[32];
  std::snprintf(text, sizeof text, "%g s",
                std::chrono::duration<double>(end.time_since_epoch()).count());
  return text;
}

/// Blocking actors to ask with, one thread's at a time, kept for the next ask: on 2 vCPUs a round
/// trip to an actor that answers at once took 52-90 us from a kept one, 115-133 us from a new one.
/// Thread-safe. Must be destroyed before its actor system, which waits for them.
class askers {
public:
  explicit askers(caf::actor_system& system) : system_(system) {}

  /// Asks `who` (named `part` in a failure: "the run queue") and waits up to `timeout` for its
  /// answer (caf::infinite: as long as it takes). The answer, or an api_error: the actor's own
  /// refusal with its kind, busy when it did not answer in time or has stopped.
  template <class T, class Handle, class... Ts>
  answer<T> ask(const Handle& who, const std::string& part, caf::duration timeout, Ts&&... xs) {
    auto self = take();
    std::optional<T> value;
    std::optional<api_error> failed;
    bool timed_out = false;
    // The deadline is the wait's own (a timed wait on the asker's mailbox), not a request timeout:
    // that one is a message through CAF's clock thread, which each ask woke.
    auto sent = (*self)->request(who, caf::infinite, std::forward<Ts>(xs)...);
    caf::blocking_actor::accept_one_cond one;
    (*self)->varargs_receive(
      one, sent.id(), [&](T& x) { value = std::move(x); },
      [&](caf::error& e) { failed = to_api_error(e, part, system_.render(e)); },
      caf::after(timeout) >> [&] {
        timed_out = true;
        failed = api_error{error_kind::busy, part + " did not answer within " + seconds_said(timeout)
                                               + ": the server is busy; try again"};
      });
    // An asker whose answer may still come goes: the next ask would find it in the mailbox.
    if (!timed_out)
      give_back(std::move(self));
    if (value)
      return std::move(*value);
    return std::move(*failed);
  }

private:
  std::unique_ptr<caf::scoped_actor> take() {
    {
      std::lock_guard lock{mutex_};
      if (!idle_.empty()) {
        auto asker = std::move(idle_.back());
        idle_.pop_back();
        return asker;
      }
    }
    return std::make_unique<caf::scoped_actor>(system_);
  }

  void give_back(std::unique_ptr<caf::scoped_actor> asker) {
    std::lock_guard lock{mutex_};
    idle_.push_back(std::move(asker));
  }

  caf::actor_system& system_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<caf::scoped_actor>> idle_;
};

} // namespace cdui::actors
