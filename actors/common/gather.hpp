#pragma once

#include <chrono>
#include <memory>
#include <utility>

#include <caf/error.hpp>
#include <caf/result.hpp>

#include "messages/atoms.hpp"

namespace cdui::actors {

/// A supervisor's status with its children's: asks each child of `children` (a map, key ->
/// handle) for its `(status)` of type `Child`, within `timeout`, and answers `parent` once every
/// child has answered or failed, each answer added with `add(parent, child)`. A child that does not
/// answer is left out.
template <class Child, class Self, class Parent, class Children, class Add>
caf::result<Parent> gather_status(Self self, Parent parent, const Children& children,
                                  std::chrono::milliseconds timeout, Add add) {
  if (children.empty())
    return parent;
  auto out = std::make_shared<Parent>(std::move(parent));
  auto pending = std::make_shared<std::size_t>(children.size());
  auto rp = self->template make_response_promise<Parent>();
  for (const auto& [key, child] : children)
    self->request(child, timeout, atoms::status::value)
      .then(
        [=](Child& answer) mutable {
          add(*out, std::move(answer));
          if (--*pending == 0)
            rp.deliver(std::move(*out));
        },
        [=](caf::error&) mutable {
          if (--*pending == 0)
            rp.deliver(std::move(*out));
        });
  return rp;
}

} // namespace cdui::actors
