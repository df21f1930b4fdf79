// libFuzzer target: the agents' wire (messages/wire.hpp). The first byte picks what the rest is
// decoded as: the envelope, or the payload of one message type of messages/worker.hpp. Whatever
// decodes must encode again, and that encoding must decode to the same encoding (a round trip
// through the wire loses nothing and is stable). The type byte is the message_type's number (0: the
// envelope; 10, resend, carries a run_cursor).
//
// Every field that decoded must also hold a value of its type: a bool 0 or 1, and a run_done's
// status one of the four ends (docs/fuzzing.md, W1 and W2: the decoder let other values through).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>
#include <cstring>
#include <type_traits>
#include <vector>

#include "messages/wire.hpp"
#include "messages/worker.hpp"

namespace {

using namespace cdui;

[[noreturn]] void fail(const char* what, const char* type) {
  std::fprintf(stderr, "wire_fuzz: %s (%s)\n", what, type);
  std::abort();
}

/// Visits every field of a decoded payload (CDUI_FIELDS) and notes the first whose value the wire
/// must not carry. Reads a bool's byte without loading it as a bool (that load is what UBSan flags).
struct value_check {
  std::string problem;

  template <class... Ts>
  bool operator()(Ts&... xs) {
    (check(xs), ...);
    return true;
  }
  void check(bool& b) {
    unsigned char byte = 0;
    std::memcpy(&byte, &b, 1);
    if (byte > 1 && problem.empty())
      problem = "a bool field of value " + std::to_string(byte);
  }
  // The one status on the wire is a run_done's: how the run ended.
  void check(run_status& s) {
    if ((!is_final(s) || to_string(s) == "unknown") && problem.empty())
      problem = "a run_status of value " + std::to_string(static_cast<int>(s));
  }
  void check(std::string&) {}
  template <class T>
  std::enable_if_t<std::is_integral_v<T>> check(T&) {}
  template <class T>
  void check(std::vector<T>& v) {
    for (auto& x : v)
      check(x);
  }
  template <class T>
  auto check(T& x) -> decltype(x.fields(*this), void()) {
    x.fields(*this);
  }
};

template <class T>
void round_trip(std::string_view frame, const char* type) {
  std::string why;
  auto first = wire::decode<T>(frame, &why);
  if (!first) {
    if (why.empty())
      fail("a refused frame without a reason", type);
    return;
  }
  value_check values;
  first->fields(values);
  if (!values.problem.empty())
    fail(("a frame decoded with " + values.problem).c_str(), type);
  auto encoded = wire::encode(*first);
  auto second = wire::decode<T>(encoded, &why);
  if (!second)
    fail(("what decoded does not decode once encoded: " + why).c_str(), type);
  if (wire::encode(*second) != encoded)
    fail("the encoding of a decoded payload changes on a second round trip", type);
}

void envelope_round_trip(std::string_view frame) {
  auto first = wire::decode_envelope(frame);
  auto* e = std::get_if<wire::envelope>(&first);
  if (e == nullptr)
    return;
  auto encoded = wire::encode_envelope(*e);
  auto second = wire::decode_envelope(encoded);
  auto* again = std::get_if<wire::envelope>(&second);
  if (again == nullptr)
    fail("an envelope that decoded does not decode once encoded", "envelope");
  if (again->version != e->version || again->type != e->type
      || again->correlation != e->correlation || again->sender != e->sender)
    fail("an envelope changes on a round trip", "envelope");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  std::string_view frame{reinterpret_cast<const char*>(data) + 1, size - 1};
  switch (data[0] % 14) {
  case 0: envelope_round_trip(frame); break;
  case 1: round_trip<hello>(frame, "hello"); break;
  case 2: round_trip<welcome>(frame, "welcome"); break;
  case 3: round_trip<refused>(frame, "refused"); break;
  case 4: round_trip<heartbeat>(frame, "heartbeat"); break;
  case 5: round_trip<assign_run>(frame, "assign_run"); break;
  case 6: round_trip<run_update>(frame, "run_update"); break;
  case 7: round_trip<run_done>(frame, "run_done"); break;
  case 8: round_trip<stop_run>(frame, "stop_run"); break;
  case 9: round_trip<run_ack>(frame, "run_ack"); break;
  case 10: round_trip<run_cursor>(frame, "run_cursor"); break;
  case 11: round_trip<outputs_request>(frame, "outputs_request"); break;
  case 12: round_trip<outputs_reply>(frame, "outputs_reply"); break;
  case 13: round_trip<goodbye>(frame, "goodbye"); break;
  }
  return 0;
}
