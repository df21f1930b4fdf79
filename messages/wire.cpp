#include "messages/wire.hpp"

#include <algorithm>
#include <istream>
#include <sstream>
#include <streambuf>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "messages/text.hpp"
#include "messages/worker.hpp"

namespace cdui::wire {

namespace {

/// An istream over bytes that are not copied.
class view_buffer : public std::streambuf {
public:
  explicit view_buffer(std::string_view bytes) {
    auto* p = const_cast<char*>(bytes.data());
    setg(p, p, p + bytes.size());
  }
  [[nodiscard]] std::size_t left() const { return static_cast<std::size_t>(egptr() - gptr()); }
};

/// The buffer a decode on this thread reads, for the size check below.
thread_local const view_buffer* current_input = nullptr;

} // namespace

} // namespace cdui::wire

namespace cereal {

/// Every container and string cereal loads reads its size first, then resizes to it. On the wire
/// each element takes at least one byte, so a size above the bytes left is garbage: refused here,
/// before the resize, instead of allocating what a corrupt or hostile frame asks for. Found by
/// argument-dependent lookup and preferred to cereal's template (it is not one). Only this file
/// decodes from a PortableBinaryInputArchive, so no other translation unit sees a different rule.
inline void CEREAL_SERIALIZE_FUNCTION_NAME(PortableBinaryInputArchive& ar, SizeTag<size_type&>& tag) {
  ar(tag.size);
  const auto* input = cdui::wire::current_input;
  if (input == nullptr || tag.size > input->left())
    throw Exception("a size of " + std::to_string(tag.size) + " is more than the frame holds");
}

/// A vector of structs grows as its elements decode, rather than being resized to its size first:
/// a garbage size then fails at the first element that is not there, having allocated nothing
/// like size x sizeof(T). More specialized than cereal's loader (its archive is a template).
template <class T, class A>
std::enable_if_t<!std::is_arithmetic_v<T>>
CEREAL_LOAD_FUNCTION_NAME(PortableBinaryInputArchive& ar, std::vector<T, A>& v) {
  size_type size = 0;
  ar(make_size_tag(size));
  v.clear();
  v.reserve(static_cast<std::size_t>(std::min<size_type>(size, 64)));
  for (size_type i = 0; i < size; ++i) {
    T x;
    ar(x);
    v.push_back(std::move(x));
  }
}

/// Every string on the wire is text: one that is not UTF-8 makes the frame malformed, so nothing
/// past the bridge ever holds bytes a JSON writer or a log line would choke on. A non-template,
/// so it is chosen over cereal's string loader.
inline void CEREAL_LOAD_FUNCTION_NAME(PortableBinaryInputArchive& ar, std::string& s) {
  size_type size = 0;
  ar(make_size_tag(size));
  s.resize(static_cast<std::size_t>(size));
  ar(binary_data(s.data(), s.size()));
  if (!cdui::text::is_utf8(s))
    throw Exception("a string that is not UTF-8");
}

/// A bool travels as one byte; any other value than 0 or 1 would decode to a bool that it is
/// undefined behaviour to read (found by wire_fuzz): the frame is malformed instead.
inline void CEREAL_LOAD_FUNCTION_NAME(PortableBinaryInputArchive& ar, bool& b) {
  std::uint8_t byte = 0;
  ar.loadBinary<sizeof byte>(&byte, sizeof byte);
  if (byte > 1)
    throw Exception("a bool of " + std::to_string(byte));
  b = byte == 1;
}

} // namespace cereal

namespace cdui::wire {

const char* to_string(message_type t) {
  switch (t) {
  case message_type::hello: return "hello";
  case message_type::welcome: return "welcome";
  case message_type::refused: return "refused";
  case message_type::heartbeat: return "heartbeat";
  case message_type::assign_run: return "assign_run";
  case message_type::run_update: return "run_update";
  case message_type::run_done: return "run_done";
  case message_type::stop_run: return "stop_run";
  case message_type::run_ack: return "run_ack";
  case message_type::resend: return "resend";
  case message_type::outputs_request: return "outputs_request";
  case message_type::outputs_reply: return "outputs_reply";
  case message_type::goodbye: return "goodbye";
  }
  return "unknown";
}

bool is_known(std::uint16_t type) {
  return type >= static_cast<std::uint16_t>(message_type::hello)
         && type <= static_cast<std::uint16_t>(message_type::goodbye);
}

const char* to_string(refusal r) {
  switch (r) {
  case refusal::too_large: return "too_large";
  case refusal::malformed: return "malformed";
  case refusal::wrong_version: return "wrong_version";
  case refusal::unknown_type: return "unknown_type";
  }
  return "unknown";
}

namespace {

template <class... Ts>
std::string write(Ts&... xs) {
  std::ostringstream out{std::ios::binary};
  {
    cereal::PortableBinaryOutputArchive archive{out};
    archive(xs...);
  }
  return out.str();
}

/// Reads the whole frame into xs; false (with the reason in `why`) when it does not decode or
/// leaves bytes over.
template <class... Ts>
bool read(std::string_view frame, std::string* why, Ts&... xs) {
  auto fail = [&](std::string reason) {
    if (why != nullptr)
      *why = std::move(reason);
    return false;
  };
  if (frame.size() > max_frame_bytes)
    return fail("a frame over " + std::to_string(max_frame_bytes) + " bytes");
  view_buffer buffer{frame};
  std::istream in{&buffer};
  current_input = &buffer;
  std::string error;
  try {
    cereal::PortableBinaryInputArchive archive{in};
    archive(xs...);
    if (buffer.left() != 0)
      error = std::to_string(buffer.left()) + " bytes left over";
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty())
      error = "it does not decode";
  }
  current_input = nullptr;
  return error.empty() || fail(std::move(error));
}

/// What a payload that decoded may still not say: empty when it is fine.
template <class T>
std::string invalid(const T&) {
  return "";
}

/// An end is final: a run_done that says queued, running or a number past the last status would be
/// recorded as the run's end (found by wire_fuzz).
std::string invalid(const run_done& d) {
  auto n = static_cast<int>(d.outcome.status);
  if (n < 0 || n > static_cast<int>(run_status::interrupted) || !is_final(d.outcome.status))
    return "a run_done whose status " + std::to_string(n) + " is not an end";
  return "";
}

} // namespace

std::string encode_envelope(const envelope& e) {
  auto version = e.version;
  auto type = static_cast<std::uint16_t>(e.type);
  auto correlation = e.correlation;
  auto sender = e.sender;
  return write(version, type, correlation, sender);
}

std::variant<envelope, refusal> decode_envelope(std::string_view frame) {
  if (frame.size() > max_frame_bytes)
    return refusal::too_large;
  std::uint16_t version = 0;
  std::uint16_t type = 0;
  envelope e;
  if (!read(frame, nullptr, version, type, e.correlation, e.sender))
    return refusal::malformed;
  if (version != protocol_version)
    return refusal::wrong_version;
  if (!is_known(type))
    return refusal::unknown_type;
  e.version = version;
  e.type = static_cast<message_type>(type);
  return e;
}

template <class T>
std::string encode(const T& payload) {
  auto copy = payload;  // cereal's archive takes non-const references for member serialize
  return write(copy);
}

template <class T>
std::optional<T> decode(std::string_view frame, std::string* why) {
  T x;
  if (!read(frame, why, x))
    return std::nullopt;
  if (auto reason = invalid(x); !reason.empty()) {
    if (why != nullptr)
      *why = std::move(reason);
    return std::nullopt;
  }
  return x;
}

#define CDUI_WIRE_PAYLOAD(T)                                                                      \
  template std::string encode<T>(const T&);                                                       \
  template std::optional<T> decode<T>(std::string_view, std::string*);

CDUI_WIRE_PAYLOAD(hello)
CDUI_WIRE_PAYLOAD(welcome)
CDUI_WIRE_PAYLOAD(refused)
CDUI_WIRE_PAYLOAD(heartbeat)
CDUI_WIRE_PAYLOAD(assign_run)
CDUI_WIRE_PAYLOAD(run_update)
CDUI_WIRE_PAYLOAD(run_done)
CDUI_WIRE_PAYLOAD(stop_run)
CDUI_WIRE_PAYLOAD(run_ack)
CDUI_WIRE_PAYLOAD(run_cursor)
CDUI_WIRE_PAYLOAD(outputs_request)
CDUI_WIRE_PAYLOAD(outputs_reply)
CDUI_WIRE_PAYLOAD(goodbye)

} // namespace cdui::wire
