#pragma once

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include <caf/behavior.hpp>
#include <caf/detail/type_traits.hpp>
#include <caf/error.hpp>
#include <caf/result.hpp>
#include <caf/sec.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/api_errors.hpp"
#include "messages/text.hpp"

namespace cdui::actors {

namespace detail {

template <class T>
struct is_result : std::false_type {};

template <class... Ts>
struct is_result<caf::result<Ts...>> : std::true_type {};

/// The error a handler's exception becomes: an api_failure as its kind and sentence (a store that
/// cannot write); any other as internal, "<actor> failed: <what>". The facade reads either.
inline caf::error handler_error(const char* actor, std::exception_ptr ep) {
  auto what = text::what_of(ep);
  spdlog::error("{}: a message handler failed, the actor goes on: {}", actor, what);
  try {
    std::rethrow_exception(ep);
  } catch (const api_failure& e) {
    return make_api_error(e.kind(), e.what());
  } catch (...) {
    return make_api_error(error_kind::internal, std::string{actor} + " failed: " + what);
  }
}

template <class F, class R, class... Ts>
auto guard(const char* actor, F f, caf::detail::type_list<Ts...>) {
  if constexpr (std::is_void_v<R>) {
    return [actor, f = std::move(f)](Ts... xs) mutable {
      try {
        f(std::forward<Ts>(xs)...);
      } catch (...) {
        (void)handler_error(actor, std::current_exception());
      }
    };
  } else {
    using answer = std::conditional_t<is_result<R>::value, R, caf::result<R>>;
    return [actor, f = std::move(f)](Ts... xs) mutable -> answer {
      try {
        return f(std::forward<Ts>(xs)...);
      } catch (...) {
        return handler_error(actor, std::current_exception());
      }
    };
  }
}

} // namespace detail

/// `f` with the same message signature, except that an exception it throws is logged and, where
/// the message expects an answer, becomes an error answer: the actor lives on. CAF 0.17 otherwise
/// ends an actor whose handler throws (one bad input would take the run queue down with it).
template <class F>
auto guarded(const char* actor, F f) {
  using trait = caf::detail::get_callable_trait<F>;
  return detail::guard<F, typename trait::result_type>(actor, std::move(f),
                                                       typename trait::arg_types{});
}

/// A behavior whose every handler is guarded().
template <class... Fs>
caf::behavior guarded_behavior(const char* actor, Fs... fs) {
  return caf::behavior{guarded(actor, std::move(fs))...};
}

/// The behavior of a typed actor that quit before it handled anything (a start that failed):
/// empty, since it handles nothing.
template <class Handle>
typename Handle::behavior_type quit_behavior() {
  return {typename Handle::behavior_type::unsafe_init{}, caf::behavior{}};
}

/// The same for a typed actor: `Handle::behavior_type`, so that a handler the handle does not
/// declare, or one missing, is a compile error.
template <class Handle, class... Fs>
typename Handle::behavior_type guarded_typed_behavior(const char* actor, Fs... fs) {
  return typename Handle::behavior_type{guarded(actor, std::move(fs))...};
}

} // namespace cdui::actors
