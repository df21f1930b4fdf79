#pragma once
// api_error (messages/api_error.hpp) as it travels between actors: a CAF error of category "cdui"
// whose code is the error_kind and whose context is the sentence; and what any error answer, ours
// or CAF's own, becomes for the facade's caller.

#include <cstdint>
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/sec.hpp>

#include "messages/api_error.hpp"

namespace cdui::actors {

/// The category of our errors among CAF's.
inline constexpr caf::atom_value api_error_category = caf::atom("cdui");

/// The error answer of a refusal: its kind and its sentence.
inline caf::error make_api_error(error_kind kind, std::string message) {
  return caf::error{static_cast<std::uint8_t>(static_cast<std::uint8_t>(kind) + 1), api_error_category,
                    caf::make_message(std::move(message))};
}

/// What an error answer from `part` ("the run queue") becomes: ours as they are; a receiver that
/// has gone, busy (the server is stopping); a CAF error with our sentence as its context (a
/// guarded handler's exception), internal with that sentence; any other, internal with `rendered`
/// (the actor system's rendering of `e`).
inline api_error to_api_error(const caf::error& e, const std::string& part, const std::string& rendered) {
  const auto& context = e.context();
  auto sentence = context.match_elements<std::string>() ? context.get_as<std::string>(0) : rendered;
  if (e.category() == api_error_category && e.code() >= 1
      && e.code() <= static_cast<std::uint8_t>(error_kind::internal) + 1)
    return {static_cast<error_kind>(e.code() - 1), sentence};
  if (e.category() == caf::atom("system")
      && (e.code() == static_cast<std::uint8_t>(caf::sec::request_receiver_down)
          || e.code() == static_cast<std::uint8_t>(caf::sec::invalid_argument)))
    return e.code() == static_cast<std::uint8_t>(caf::sec::request_receiver_down)
             ? api_error{error_kind::busy, part + " has stopped: the server is stopping"}
             : api_error{error_kind::refused, sentence};
  return {error_kind::internal, sentence};
}

} // namespace cdui::actors
