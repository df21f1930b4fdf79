#pragma once

#include <exception>
#include <string>
#include <string_view>

/// Text that came from outside (the network, the wire, a data file) may hold any bytes. These
/// check it at the edge, or make it safe to carry on where it is only data.
namespace cdui::text {

/// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
[[nodiscard]] bool is_utf8(std::string_view s);

/// `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
[[nodiscard]] std::string to_utf8(std::string_view s);

/// The number of characters (code points) in well-formed UTF-8 `s`.
[[nodiscard]] std::size_t characters(std::string_view s);

/// `s` in single quotes for a message or a log line: bytes that are not UTF-8 replaced by
/// U+FFFD, control characters written as \xNN, at most `max_chars` characters kept ("..." marks
/// a cut).
[[nodiscard]] std::string quoted(std::string_view s, std::size_t max_chars = 80);

/// `s` without the spaces and tabs at its ends.
[[nodiscard]] std::string_view trimmed(std::string_view s);

/// What a caught exception says (its what(), as UTF-8), or `unknown` for one that is no
/// std::exception: for the message of a handler that failed.
[[nodiscard]] std::string what_of(std::exception_ptr ep, std::string_view unknown = "an unknown exception");

} // namespace cdui::text
