// A test double of the NVIDIA driver's NVML (libnvidia-ml.so.1), loaded in its place through
// $CODEFYUI_NVML_LIBRARY: the cards it describes come from the file $CDUI_FAKE_NVML names, read
// again at each call, so that a test changes what a card holds while cdui watches. One card a line:
//   name|uuid|total bytes|used bytes|compute major.minor|pid=bytes,pid=bytes
// ('#' starts a comment). Without the variable, or with no such file, nvmlInit_v2 fails as on a
// machine whose driver is not loaded. It implements the calls devices/nvml.cpp makes, with their C
// signatures.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int success = 0;
constexpr int invalid_argument = 2;
constexpr int insufficient_size = 7;
constexpr int driver_not_loaded = 9;
constexpr int not_found = 6;

struct process {
  unsigned pid;
  unsigned long long used;
};

struct card {
  std::string name, uuid;
  unsigned long long total = 0, used = 0;
  int major = 0, minor = 0;
  std::vector<process> processes;
};

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> parts;
  std::stringstream in{text};
  for (std::string part; std::getline(in, part, by);)
    parts.push_back(part);
  return parts;
}

bool read_cards(std::vector<card>& out) {
  const char* path = std::getenv("CDUI_FAKE_NVML");
  if (path == nullptr)
    return false;
  std::ifstream in{path};
  if (!in)
    return false;
  out.clear();
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    auto f = split(line, '|');
    if (f.size() < 5)
      continue;
    card c;
    c.name = f[0];
    c.uuid = f[1];
    c.total = std::stoull(f[2]);
    c.used = std::stoull(f[3]);
    auto cc = split(f[4], '.');
    c.major = std::stoi(cc.at(0));
    c.minor = cc.size() > 1 ? std::stoi(cc[1]) : 0;
    if (f.size() > 5)
      for (const auto& p : split(f[5], ',')) {
        auto kv = split(p, '=');
        if (kv.size() == 2)
          c.processes.push_back({static_cast<unsigned>(std::stoul(kv[0])), std::stoull(kv[1])});
      }
    out.push_back(std::move(c));
  }
  return true;
}

/// A handle is the card's index + 1 (never null).
bool card_of(void* handle, card& c) {
  std::vector<card> cards;
  auto index = reinterpret_cast<std::uintptr_t>(handle);
  if (!read_cards(cards) || index == 0 || index > cards.size())
    return false;
  c = cards[index - 1];
  return true;
}

int copy_text(const std::string& text, char* buffer, unsigned length) {
  if (buffer == nullptr || length <= text.size())
    return insufficient_size;
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return success;
}

struct memory_v1 {
  unsigned long long total, free, used;
};
struct process_info {
  unsigned pid;
  unsigned long long used;
  unsigned gpu_instance, compute_instance;
};

} // namespace

extern "C" {

int nvmlInit_v2() {
  std::vector<card> cards;
  return read_cards(cards) ? success : driver_not_loaded;
}

int nvmlShutdown() { return success; }

const char* nvmlErrorString(int result) {
  switch (result) {
  case driver_not_loaded: return "Driver Not Loaded";
  case not_found: return "Not Found";
  case insufficient_size: return "Insufficient Size";
  default: return "Unknown Error";
  }
}

int nvmlDeviceGetCount_v2(unsigned* count) {
  std::vector<card> cards;
  if (!read_cards(cards))
    return driver_not_loaded;
  *count = static_cast<unsigned>(cards.size());
  return success;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** handle) {
  std::vector<card> cards;
  if (!read_cards(cards) || index >= cards.size())
    return invalid_argument;
  *handle = reinterpret_cast<void*>(static_cast<std::uintptr_t>(index) + 1);
  return success;
}

int nvmlDeviceGetHandleByUUID(const char* uuid, void** handle) {
  std::vector<card> cards;
  if (!read_cards(cards))
    return driver_not_loaded;
  for (std::size_t i = 0; i < cards.size(); ++i)
    if (cards[i].uuid == uuid) {
      *handle = reinterpret_cast<void*>(static_cast<std::uintptr_t>(i) + 1);
      return success;
    }
  return not_found;
}

int nvmlDeviceGetName(void* handle, char* name, unsigned length) {
  card c;
  return card_of(handle, c) ? copy_text(c.name, name, length) : invalid_argument;
}

int nvmlDeviceGetUUID(void* handle, char* uuid, unsigned length) {
  card c;
  return card_of(handle, c) ? copy_text(c.uuid, uuid, length) : invalid_argument;
}

int nvmlDeviceGetMemoryInfo(void* handle, memory_v1* memory) {
  card c;
  if (!card_of(handle, c))
    return invalid_argument;
  *memory = {c.total, c.total - c.used, c.used};
  return success;
}

int nvmlDeviceGetCudaComputeCapability(void* handle, int* major, int* minor) {
  card c;
  if (!card_of(handle, c))
    return invalid_argument;
  *major = c.major;
  *minor = c.minor;
  return success;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void* handle, unsigned* count, process_info* infos) {
  card c;
  if (!card_of(handle, c))
    return invalid_argument;
  auto n = static_cast<unsigned>(c.processes.size());
  if (infos == nullptr || *count < n) {
    *count = n;
    return n == 0 ? success : insufficient_size;
  }
  for (unsigned i = 0; i < n; ++i)
    infos[i] = {c.processes[i].pid, c.processes[i].used, 0, 0};
  *count = n;
  return success;
}

} // extern "C"
