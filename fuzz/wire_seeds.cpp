// Writes the seed corpus of wire_fuzz: one valid frame of each message type (and an envelope), as
// the agents and the server encode them, each prefixed with wire_fuzz's type byte. Run it again
// when a payload's fields change (protocol_version goes up):
//   build-fuzz/fuzz/wire_seeds fuzz/corpus/wire
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "messages/wire.hpp"
#include "messages/worker.hpp"

namespace {

using namespace cdui;

std::filesystem::path out_dir;

void seed(const std::string& name, std::uint8_t type, const std::string& frame) {
  std::ofstream out{out_dir / name, std::ios::binary | std::ios::trunc};
  out.put(static_cast<char>(type));
  out << frame;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: wire_seeds FOLDER\n");
    return 2;
  }
  out_dir = argv[1];
  std::filesystem::create_directories(out_dir);
  device_offer cpu{"cpu", "cpu", "", 8LL << 30, 4LL << 30};
  device_offer sim{"sim:0", "sim", "SIM-CARD-A-0", 1LL << 30, 1LL << 30};
  seed("envelope", 0, wire::encode_envelope({wire::protocol_version, wire::message_type::heartbeat, 42, "gpu-box"}));
  seed("hello", 1, wire::encode(hello{"gpu-box", "0.1.0", "0123456789abcdef", "fedcba9876543210",
                                      {cpu, sim}, "credential", {"run-1"}, false}));
  seed("welcome", 2, wire::encode(welcome{"0.1.0", 500, {{"run-1", 17}}, {"run-0"}}));
  seed("refused", 3, wire::encode(refused{"another version: 0.2.0", false}));
  seed("heartbeat", 4, wire::encode(heartbeat{{cpu, sim}, {"run-1", "run-2"}}));
  seed("assign_run", 5, wire::encode(assign_run{"run-3", "moons", R"({"nodes":[],"edges":[]})",
                                                R"({"device":"sim:0"})", {"sim:0"}, 7}));
  seed("assign_run-ddp_part", 5,
       wire::encode(assign_run{"run-4-rank2", "moons", R"({"nodes":[],"edges":[]})", "{}", {"sim:0", "sim:1"}, 7,
                               ddp_part{4, 2, {"w1/sim:0", "w1/sim:1", "w2/sim:0", "w2/sim:1"}, "10.0.0.5",
                                        41234, "0123456789abcdef"}}));
  seed("run_update", 6, wire::encode(run_update{"run-3", {{1, 1700000000000, "metric",
                                                           R"({"node":"loop","name":"loss","value":0.5})"},
                                                          {2, 1700000000001, "progress", "{}"}}}));
  run_outcome failed{run_status::failed, "Node Dataset (data) failed: no such file", "{}"};
  seed("run_done", 7, wire::encode(run_done{"run-3", failed, 2}));
  seed("stop_run", 8, wire::encode(stop_run{"run-3", true}));
  seed("run_ack", 9, wire::encode(run_ack{"run-3"}));
  seed("resend", 10, wire::encode(run_cursor{"run-3", 1}));
  seed("outputs_request", 11, wire::encode(outputs_request{"run-3"}));
  seed("outputs_reply", 12, wire::encode(outputs_reply{"run-3", true, R"({"data":{}})", "", false}));
  seed("goodbye", 13, wire::encode(goodbye{"the agent stops"}));
  return 0;
}
