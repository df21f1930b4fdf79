// The wire form of the worker protocol: round trips, and refusals of every kind of bad frame
// without crashing or allocating what a garbage size field asks for.
#include <boost/test/unit_test.hpp>

#include <random>

#include <sys/resource.h>

#include "messages/wire.hpp"
#include "messages/worker.hpp"

using namespace cdui;

namespace {

hello sample_hello() {
  hello h;
  h.name = "gpu-box";
  h.version = "0.1.0";
  h.env_digest = "env:1234";
  h.node_types_digest = "nodes:abcd";
  h.devices = {{"cpu", "cpu", "", 8LL << 30, 6LL << 30}, {"sim:0", "sim", "sim-uuid-0", 1LL << 30, 1LL << 30}};
  h.credential = std::string(64, 'k');
  h.running_runs = {"a1b2c3d4"};
  h.one_shot = true;
  return h;
}

/// The most resident memory this process has had, in KiB.
long max_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

/// A payload frame as cereal's portable binary writes it: the endianness byte (1: little), then
/// the fields, each number little-endian.
std::string frame(std::initializer_list<std::uint64_t> sizes) {
  std::string out(1, '\x01');
  for (auto size : sizes)
    for (int i = 0; i < 8; ++i)
      out += static_cast<char>((size >> (8 * i)) & 0xff);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(wire_test)

BOOST_AUTO_TEST_CASE(every_payload_round_trips) {
  auto h = sample_hello();
  auto back = wire::decode<hello>(wire::encode(h));
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->name == "gpu-box");
  BOOST_TEST(back->devices.size() == 2u);
  BOOST_TEST(back->devices[1].uuid == "sim-uuid-0");
  BOOST_TEST(back->devices[0].total_bytes == (8LL << 30));
  BOOST_TEST(back->running_runs == std::vector<std::string>{"a1b2c3d4"});
  BOOST_TEST(back->one_shot);

  run_update u{"a1b2c3d4", {{1, 1700000000000, "metric", R"({"name":"train_loss","value":0.5})"},
                            {2, 1700000000001, "execution_complete", "{}"}}};
  auto u2 = wire::decode<run_update>(wire::encode(u));
  BOOST_REQUIRE(u2.has_value());
  BOOST_TEST(u2->events.size() == 2u);
  BOOST_TEST(u2->events[1].type == "execution_complete");
  BOOST_TEST(u2->events[0].time_ms == 1700000000000);

  welcome w{"0.1.0", 500, {{"a1b2c3d4", 17}}, {"deadbeef"}};
  auto w2 = wire::decode<welcome>(wire::encode(w));
  BOOST_REQUIRE(w2.has_value());
  BOOST_TEST(w2->resume.at(0).cursor == 17u);
  BOOST_TEST(w2->forget == std::vector<std::string>{"deadbeef"});
  BOOST_TEST(wire::decode<run_cursor>(wire::encode(run_cursor{"x", 9}))->cursor == 9u);

  run_done d{"a1b2c3d4", {run_status::failed, "Node X failed", "{}"}, 42};
  auto d2 = wire::decode<run_done>(wire::encode(d));
  BOOST_REQUIRE(d2.has_value());
  BOOST_TEST((d2->outcome.status == run_status::failed));
  BOOST_TEST(d2->outcome.error == "Node X failed");
  BOOST_TEST(d2->last_cursor == 42u);

  assign_run a{"a1b2c3d4", "n", R"({"nodes":[]})", "{}", {"sim:1"}, 42};
  BOOST_TEST(wire::decode<assign_run>(wire::encode(a))->seed == 42u);
  BOOST_TEST(!wire::decode<assign_run>(wire::encode(a))->ddp.spread());
  // A part of a DDP run across workers carries its ranks, every rank's card and the store.
  a.ddp = {4, 2, {"w1/sim:0", "w1/sim:1", "w2/sim:0", "w2/sim:1"}, "10.0.0.5", 41234, "secret"};
  auto part = wire::decode<assign_run>(wire::encode(a));
  BOOST_REQUIRE(part.has_value());
  BOOST_TEST(part->ddp.spread());
  BOOST_TEST(part->ddp.first_rank == 2);
  BOOST_TEST(part->ddp.devices.size() == 4u);
  BOOST_TEST(part->ddp.store_host == "10.0.0.5");
  BOOST_TEST(part->ddp.store_port == 41234);
  BOOST_TEST(part->ddp.secret == "secret");
  BOOST_TEST(wire::decode<stop_run>(wire::encode(stop_run{"x", true}))->interrupt);
}

BOOST_AUTO_TEST_CASE(a_goodbye_round_trips_and_is_a_known_type) {
  auto back = wire::decode<goodbye>(wire::encode(goodbye{"the agent stops", true}));
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->reason == "the agent stops");
  BOOST_TEST(back->leaving);
  wire::envelope e{wire::protocol_version, wire::message_type::goodbye, 0, "agent-1"};
  auto decoded = wire::decode_envelope(wire::encode_envelope(e));
  BOOST_REQUIRE(std::holds_alternative<wire::envelope>(decoded));
  BOOST_TEST((std::get<wire::envelope>(decoded).type == wire::message_type::goodbye));
  BOOST_TEST(wire::to_string(wire::message_type::goodbye) == std::string{"goodbye"});
}

BOOST_AUTO_TEST_CASE(an_envelope_round_trips_and_bad_ones_are_refused_by_reason) {
  wire::envelope e{wire::protocol_version, wire::message_type::heartbeat, 77, "agent-1"};
  auto back = wire::decode_envelope(wire::encode_envelope(e));
  BOOST_REQUIRE(std::holds_alternative<wire::envelope>(back));
  BOOST_TEST((std::get<wire::envelope>(back).type == wire::message_type::heartbeat));
  BOOST_TEST(std::get<wire::envelope>(back).correlation == 77u);
  BOOST_TEST(std::get<wire::envelope>(back).sender == "agent-1");

  auto reason = [](const std::string& bytes) {
    auto r = wire::decode_envelope(bytes);
    return std::holds_alternative<wire::refusal>(r) ? wire::to_string(std::get<wire::refusal>(r))
                                                    : "accepted";
  };
  auto old = e;
  old.version = 0;
  BOOST_TEST(reason(wire::encode_envelope(old)) == std::string{"wrong_version"});
  auto unknown = wire::encode_envelope(e);
  unknown[3] = '\x7f';  // the type number, little-endian after the endianness byte and version
  BOOST_TEST(reason(unknown) == std::string{"unknown_type"});
  BOOST_TEST(reason("") == std::string{"malformed"});
  BOOST_TEST(reason("garbage") == std::string{"malformed"});
  BOOST_TEST(reason(wire::encode_envelope(e) + "x") == std::string{"malformed"});  // bytes over
  BOOST_TEST(reason(std::string(wire::max_frame_bytes + 1, '\0')) == std::string{"too_large"});
  // A payload is not an envelope, and a hello is not a heartbeat.
  BOOST_TEST(!wire::decode<heartbeat>(wire::encode(sample_hello())).has_value());
}

BOOST_AUTO_TEST_CASE(a_garbage_size_allocates_nothing_like_what_it_claims) {
  auto before = max_rss_kib();
  // Sizes larger than the frame: a name of 2^40 bytes, 50 million events.
  BOOST_TEST(!wire::decode<hello>(frame({1ULL << 40})).has_value());
  BOOST_TEST(!wire::decode<run_update>(frame({0, 50'000'000})).has_value());
  // A size the frame could hold as bytes, not as structs: a million devices in 2 MB. Resized up
  // front that is 1,000,000 x sizeof(device_offer), some 150 MB.
  std::string devices = frame({0, 0, 0, 0, 1'000'000});  // name, version, both digests empty
  devices += std::string(2 * 1024 * 1024, '\0');
  BOOST_TEST(!wire::decode<hello>(devices).has_value());
  BOOST_TEST(max_rss_kib() - before < 64 * 1024);  // well under 64 MiB more
}

BOOST_AUTO_TEST_CASE(ten_thousand_random_frames_decode_to_nothing_or_something_valid) {
  std::mt19937 gen{12345};
  auto valid = wire::encode(sample_hello());
  int decoded = 0;
  for (int i = 0; i < 10'000; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes.resize(gen() % 300);
      for (auto& c : bytes)
        c = static_cast<char>(gen());
    } else {
      bytes = valid;  // a valid frame with a few bytes flipped or cut
      for (int k = 0; k < 3; ++k)
        bytes[gen() % bytes.size()] = static_cast<char>(gen());
      bytes.resize(gen() % (bytes.size() + 1));
    }
    (void)wire::decode_envelope(bytes);
    for (auto type : {0, 1, 2})
      decoded += type == 0   ? wire::decode<hello>(bytes).has_value()
                 : type == 1 ? wire::decode<run_update>(bytes).has_value()
                             : wire::decode<heartbeat>(bytes).has_value();
  }
  BOOST_TEST(decoded < 10'000);  // nearly all refused; none crashed
}

BOOST_AUTO_TEST_CASE(a_string_that_is_not_utf8_makes_the_frame_malformed_with_the_reason) {
  auto h = sample_hello();
  h.name = "gpu\xff" "box";
  std::string why;
  BOOST_TEST(!wire::decode<hello>(wire::encode(h), &why).has_value());
  BOOST_TEST(why == "a string that is not UTF-8");
  // Deep inside the struct too: a device's name.
  h = sample_hello();
  h.devices[1].uuid = "\xc0\xaf";  // an overlong '/'
  BOOST_TEST(!wire::decode<hello>(wire::encode(h)).has_value());
  // Well-formed multi-byte text passes.
  h = sample_hello();
  h.name = "gpu-\xc3\xa9t\xc3\xa9";  // gpu-été
  BOOST_TEST(wire::decode<hello>(wire::encode(h))->name == h.name);
  // A frame cut short says so.
  auto frame = wire::encode(sample_hello());
  frame.resize(frame.size() / 2);
  BOOST_TEST(!wire::decode<hello>(frame, &why).has_value());
  BOOST_TEST(!why.empty());
}

BOOST_AUTO_TEST_CASE(a_bool_byte_past_1_and_a_run_done_that_is_no_end_are_malformed) {
  // What wire_fuzz found decoding: a bool holding 2, and an end whose status is still running.
  auto frame = wire::encode(stop_run{"a1b2c3d4", true});
  BOOST_TEST(static_cast<int>(frame.back()) == 1);
  frame.back() = 2;
  std::string why;
  BOOST_TEST(!wire::decode<stop_run>(frame, &why).has_value());
  BOOST_TEST(why == "a bool of 2");
  run_done done{"a1b2c3d4", {run_status::running, "", "{}"}, 7};
  BOOST_TEST(!wire::decode<run_done>(wire::encode(done), &why).has_value());
  BOOST_TEST(why == "a run_done whose status 1 is not an end");
  done.outcome.status = run_status::failed;
  BOOST_TEST(wire::decode<run_done>(wire::encode(done)).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
