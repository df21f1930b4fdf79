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
/// child has answered or failed, each answer added with `add(parent, child)`, and `finish(parent)`
/// called last. A child that does not answer is left out.
template <class Child, class Self, class Parent, class Children, class Add, class Finish>
caf::result<Parent> gather_status(Self self, Parent parent, const Children& children,
                                  std::chrono::milliseconds timeout, Add add, Finish finish) {
  if (children.empty()) {
    finish(parent);
    return parent;
  }
  auto out = std::make_shared<Parent>(std::move(parent));
  auto pending = std::make_shared<std::size_t>(children.size());
  auto rp = self->template make_response_promise<Parent>();
  auto one_more = [=]() mutable {
    if (--*pending != 0)
      return;
    finish(*out);
    rp.deliver(std::move(*out));
  };
  for (const auto& [key, child] : children)
    self->request(child, timeout, atoms::status::value)
      .then([=](Child& answer) mutable { add(*out, std::move(answer)); one_more(); },
            [=](caf::error&) mutable { one_more(); });
  return rp;
}

template <class Child, class Self, class Parent, class Children, class Add>
caf::result<Parent> gather_status(Self self, Parent parent, const Children& children,
                                  std::chrono::milliseconds timeout, Add add) {
  return gather_status<Child>(self, std::move(parent), children, timeout, std::move(add),
                              [](Parent&) {});
}

} // namespace cdui::actors
