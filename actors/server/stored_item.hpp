#pragma once

#include <any>
#include <memory>

#include <caf/allowed_unsafe_message_type.hpp>

namespace cdui::actors {

/// A value a store holds: the runtime's (node outputs, a model, a run's outputs), which only the
/// runtime looks inside. Shared, never copied: a store hands out the object it holds.
struct stored_item {
  std::shared_ptr<const std::any> value;
};

} // namespace cdui::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cdui::actors::stored_item)
