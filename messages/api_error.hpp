#pragma once

#include <cassert>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace cdui {

/// What kind of failure took the place of an answer: the HTTP edge maps each to its status in one
/// place (apps/http_edge.hpp), a command line to its words.
enum class error_kind {
  /// No such run, sweep, study or worker (404).
  not_found,
  /// The request itself was refused: a bad value, an unknown option (400).
  refused,
  /// The request is sound but what it names is in a state that does not allow it: a run still
  /// active, a card that cannot be shared (409).
  conflict,
  /// A part of the server did not answer in time, or is stopping: try again (503).
  busy,
  /// The home's store could not read or write: a full disk, an unreadable file (503).
  store_failure,
  /// A part of the server failed while answering (500).
  internal,
};

[[nodiscard]] constexpr const char* to_string(error_kind kind) {
  switch (kind) {
  case error_kind::not_found:
    return "not_found";
  case error_kind::refused:
    return "refused";
  case error_kind::conflict:
    return "conflict";
  case error_kind::busy:
    return "busy";
  case error_kind::store_failure:
    return "store_failure";
  case error_kind::internal:
    return "internal";
  }
  return "internal";
}

/// Why the server gave no answer: its kind and the sentence that says it, naming what was wrong
/// ("no run has the id 'x'", "the run queue did not answer within 30 s").
struct api_error {
  error_kind kind = error_kind::internal;
  std::string message;
};

/// An exception that says its kind: what the store throws when SQLite cannot read or write
/// (store_failure), or a handler that refuses from deep inside. A guarded actor handler
/// (actors/common/guarded.hpp) answers it as its kind; any other exception is internal.
class api_failure : public std::runtime_error {
public:
  api_failure(error_kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  [[nodiscard]] error_kind kind() const { return kind_; }

private:
  error_kind kind_;
};

/// What the facade answers where a caller must tell "there is none" from "it could not be asked":
/// a value, or the api_error in its place. Read as a std::optional is (`if (auto x = ...)`, `*x`,
/// `x->`), with error() saying why it is empty.
template <class T>
class answer {
public:
  answer(T value) : value_(std::move(value)) {}  // NOLINT: a value converts, as into an optional
  answer(api_error error) : error_(std::move(error)) {}  // NOLINT: so does the error

  [[nodiscard]] bool has_value() const { return value_.has_value(); }
  explicit operator bool() const { return has_value(); }

  /// The value; there must be one (check first, as with an optional).
  [[nodiscard]] T& operator*() & { return checked(); }
  [[nodiscard]] const T& operator*() const& { return const_cast<answer*>(this)->checked(); }
  /// By value from a temporary, so that `for (auto& x : *f())` holds no dangling reference.
  [[nodiscard]] T operator*() && { return std::move(checked()); }
  [[nodiscard]] T* operator->() { return &checked(); }
  [[nodiscard]] const T* operator->() const { return &const_cast<answer*>(this)->checked(); }

  /// The value; throws the error as an api_failure (a std::runtime_error) when there is none.
  [[nodiscard]] const T& value() const& {
    if (!value_)
      throw api_failure(error_.kind, error_.message);
    return *value_;
  }
  [[nodiscard]] T value() && {
    if (!value_)
      throw api_failure(error_.kind, error_.message);
    return std::move(*value_);
  }
  template <class U>
  [[nodiscard]] T value_or(U&& fallback) const& {
    return value_ ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }

  /// Why there is no value; meaningful only then.
  [[nodiscard]] const api_error& error() const { return error_; }
  /// The value as a plain optional, for callers to whom any failure means "none".
  [[nodiscard]] const std::optional<T>& optional() const { return value_; }

private:
  T& checked() {
    assert(value_.has_value() && "an answer<T> read without a value: check it first");
    return *value_;
  }

  std::optional<T> value_;
  api_error error_;
};

} // namespace cdui
