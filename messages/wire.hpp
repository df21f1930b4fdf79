#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

/// The wire between the server and its agents (docs/architecture.md, "The wire"): a message is two
/// ZeroMQ frames, [envelope][payload]. The envelope says the protocol version, the payload's type,
/// a correlation id and the sender; the payload is the cereal portable-binary form of a messages/
/// struct. Decoding never trusts its input: a size field larger than what is left of the frame is
/// refused before anything is allocated, so a garbage frame costs its own bytes and nothing more.
namespace cdui::wire {

/// Bumped whenever a payload's fields change; an agent of another version is refused. A new
/// message type is no such change: a peer that does not know it refuses it as unknown_type, and
/// counts it, and nothing else changes.
inline constexpr std::uint16_t protocol_version = 2;

/// The largest payload frame the bridge accepts (a graph of a few MB fits easily).
inline constexpr std::size_t max_frame_bytes = 16 * 1024 * 1024;

enum class message_type : std::uint16_t {
  hello = 1,
  welcome = 2,
  refused = 3,
  heartbeat = 4,
  assign_run = 5,
  run_update = 6,
  run_done = 7,
  stop_run = 8,
  run_ack = 9,
  resend = 10,  // payload: run_cursor
  outputs_request = 11,
  outputs_reply = 12,
  goodbye = 13,  // agent -> server: it stops; server -> agent: noted (the same payload back)
};

[[nodiscard]] const char* to_string(message_type t);
/// Whether a number read off the wire names a message type.
[[nodiscard]] bool is_known(std::uint16_t type);

struct envelope {
  std::uint16_t version = protocol_version;
  message_type type = message_type::hello;
  std::uint64_t correlation = 0;
  std::string sender;
};

/// Why a frame was refused; counted per reason by the bridge.
enum class refusal {
  too_large,      // over max_frame_bytes
  malformed,      // not an envelope, or a payload that does not decode as its type
  wrong_version,  // another protocol version
  unknown_type,   // a type number this version does not know
};

[[nodiscard]] const char* to_string(refusal r);

[[nodiscard]] std::string encode_envelope(const envelope& e);
[[nodiscard]] std::variant<envelope, refusal> decode_envelope(std::string_view frame);

/// A payload's frame. Defined in wire.cpp for every struct of messages/worker.hpp.
template <class T>
[[nodiscard]] std::string encode(const T& payload);

/// The payload, or nullopt when the frame is not a T: it does not decode, leaves bytes over, is
/// over max_frame_bytes, or holds a string that is not UTF-8 (every string on the wire is text).
/// `why`, when given, gets the reason in a few words.
template <class T>
[[nodiscard]] std::optional<T> decode(std::string_view frame, std::string* why = nullptr);

} // namespace cdui::wire
