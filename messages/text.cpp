#include "messages/text.hpp"

namespace cdui::text {

namespace {

/// The length of the well-formed UTF-8 sequence at the start of `s`, 0 when there is none
/// (the table of well-formed byte sequences in the Unicode standard, section 3.9).
std::size_t sequence_length(std::string_view s) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  auto in = [&](std::size_t i, unsigned lo, unsigned hi) {
    return i < s.size() && byte(i) >= lo && byte(i) <= hi;
  };
  unsigned b0 = byte(0);
  if (b0 <= 0x7F)
    return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    return in(1, 0x80, 0xBF) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;
    unsigned hi = b0 == 0xED ? 0x9F : 0xBF;
    return in(1, lo, hi) && in(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;
    unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return in(1, lo, hi) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD

} // namespace

bool is_utf8(std::string_view s) {
  while (!s.empty()) {
    auto n = sequence_length(s);
    if (n == 0)
      return false;
    s.remove_prefix(n);
  }
  return true;
}

std::string to_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    auto n = sequence_length(s);
    if (n == 0) {
      out += replacement;
      n = 1;
    } else {
      out.append(s.data(), n);
    }
    s.remove_prefix(n);
  }
  return out;
}

std::size_t characters(std::string_view s) {
  std::size_t count = 0;
  while (!s.empty()) {
    auto n = sequence_length(s);
    s.remove_prefix(n == 0 ? 1 : n);
    ++count;
  }
  return count;
}

std::string quoted(std::string_view s, std::size_t max_chars) {
  std::string out = "'";
  std::size_t kept = 0;
  while (!s.empty()) {
    if (kept == max_chars) {
      out += "...";
      break;
    }
    auto n = sequence_length(s);
    auto c = static_cast<unsigned char>(s[0]);
    if (n == 0) {
      out += replacement;
      n = 1;
    } else if (c < 0x20 || c == 0x7F) {  // a newline in a name must not start a log line
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xF];
    } else {
      out.append(s.data(), n);
    }
    s.remove_prefix(n);
    ++kept;
  }
  return out + "'";
}

std::string what_of(std::exception_ptr ep, std::string_view unknown) {
  try {
    std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    return to_utf8(e.what());
  } catch (...) {
  }
  return std::string{unknown};
}

std::string_view trimmed(std::string_view s) {
  auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos)
    return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

} // namespace cdui::text
