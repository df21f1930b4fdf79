#pragma once

#include <utility>

/// Declares a message struct's fields once, for both of its forms: CAF's inspect (in-process
/// messages) and cereal's serialize (the wire, messages/wire.hpp). Use it inside the struct:
///
///   struct heartbeat { std::vector<device_offer> devices; CDUI_FIELDS(devices) };
///
/// cereal's serialize is a member, so CAF (which looks for a free serialize) does not see it.
#define CDUI_FIELDS(...)                                                                          \
  template <class F>                                                                              \
  auto fields(F& f) {                                                                             \
    return f(__VA_ARGS__);                                                                        \
  }                                                                                               \
  template <class Archive>                                                                        \
  void serialize(Archive& archive) {                                                              \
    archive(__VA_ARGS__);                                                                         \
  }

namespace cdui {

/// CAF's inspect for every struct that declares CDUI_FIELDS.
template <class Inspector, class T>
auto inspect(Inspector& f, T& x) -> decltype(x.fields(f)) {
  return x.fields(f);
}

} // namespace cdui
