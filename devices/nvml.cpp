#include "devices/nvml.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>

namespace cdui::devices {

namespace {

// The few NVML declarations cdui uses, as nvml.h gives them (a stable C ABI; the header is not
// needed to build, so the default build needs no CUDA toolkit).
using nvml_return = int;
using nvml_device = struct nvml_device_st*;
struct nvml_memory_v1 {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvml_process_info {  // nvmlProcessInfo_t of the _v2 and _v3 calls
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr nvml_return nvml_success = 0;
constexpr nvml_return nvml_error_insufficient_size = 7;
constexpr unsigned long long nvml_value_not_available = std::numeric_limits<unsigned long long>::max();
constexpr unsigned nvml_text_buffer = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE, ..._UUID_V2_...
/// More processes than any card holds: a bound on what a (faulty) library can make us allocate.
constexpr unsigned max_processes = 4096;
constexpr unsigned max_cards = 1024;

std::int64_t bytes(unsigned long long n) {
  return n > static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())
           ? std::numeric_limits<std::int64_t>::max()
           : static_cast<std::int64_t>(n);
}

/// A string NVML wrote into `buffer`, cut at its first NUL or at the buffer's end.
std::string text_of(const char* buffer, std::size_t size) {
  std::size_t n = 0;
  while (n < size && buffer[n] != '\0')
    ++n;
  return {buffer, n};
}

} // namespace

struct nvml::functions {
  void* library = nullptr;
  nvml_return (*init)() = nullptr;
  nvml_return (*shutdown)() = nullptr;
  const char* (*error_string)(nvml_return) = nullptr;
  nvml_return (*count)(unsigned*) = nullptr;
  nvml_return (*by_index)(unsigned, nvml_device*) = nullptr;
  nvml_return (*by_uuid)(const char*, nvml_device*) = nullptr;
  nvml_return (*name)(nvml_device, char*, unsigned) = nullptr;
  nvml_return (*uuid)(nvml_device, char*, unsigned) = nullptr;
  nvml_return (*memory)(nvml_device, nvml_memory_v1*) = nullptr;
  nvml_return (*capability)(nvml_device, int*, int*) = nullptr;
  nvml_return (*processes)(nvml_device, unsigned*, nvml_process_info*) = nullptr;

  [[nodiscard]] std::string error(nvml_return r) const {
    const char* text = error_string == nullptr ? nullptr : error_string(r);
    return (text == nullptr ? "error" : text) + std::string{" (NVML "} + std::to_string(r) + ")";
  }

  [[nodiscard]] std::optional<gpu_memory> memory_of(nvml_device d) const {
    nvml_memory_v1 m{};
    if (memory(d, &m) != nvml_success)
      return std::nullopt;
    return gpu_memory{bytes(m.total), bytes(m.free), bytes(m.used)};
  }

  /// The processes on `d`; none when the driver does not say (a card or a driver without the call).
  [[nodiscard]] std::vector<gpu_process> processes_on(nvml_device d) const {
    std::vector<gpu_process> out;
    if (processes == nullptr)
      return out;
    unsigned n = 0;
    auto r = processes(d, &n, nullptr);
    // Processes come and go between the two calls: room for a few more, and a second try.
    for (int attempt = 0; attempt < 3 && r == nvml_error_insufficient_size && n <= max_processes; ++attempt) {
      std::vector<nvml_process_info> infos(n + 8);
      n = static_cast<unsigned>(infos.size());
      r = processes(d, &n, infos.data());
      if (r == nvml_success) {
        for (unsigned i = 0; i < n && i < infos.size(); ++i)
          out.push_back({infos[i].pid, infos[i].used_gpu_memory == nvml_value_not_available
                                         ? -1 : bytes(infos[i].used_gpu_memory)});
        return out;
      }
    }
    return out;
  }
};

std::string nvml_library_path() {
  const char* path = std::getenv(nvml_library_env);
  return path != nullptr && *path != '\0' ? path : "libnvidia-ml.so.1";
}

std::variant<std::shared_ptr<nvml>, std::string> nvml::open(const std::string& path) {
  auto f = std::make_unique<functions>();
  f->library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (f->library == nullptr) {
    const char* why = ::dlerror();
    return "no NVIDIA driver: " + path + " cannot be loaded (" + (why == nullptr ? "" : why) + ")";
  }
  auto find = [&](auto& slot, const char* symbol) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(f->library, symbol));
    return slot != nullptr;
  };
  std::string missing;
  auto need = [&](auto& slot, const char* symbol) {
    if (!find(slot, symbol))
      missing += (missing.empty() ? "" : ", ") + std::string{symbol};
  };
  need(f->init, "nvmlInit_v2");
  need(f->shutdown, "nvmlShutdown");
  need(f->error_string, "nvmlErrorString");
  need(f->count, "nvmlDeviceGetCount_v2");
  need(f->by_index, "nvmlDeviceGetHandleByIndex_v2");
  need(f->by_uuid, "nvmlDeviceGetHandleByUUID");
  need(f->name, "nvmlDeviceGetName");
  need(f->uuid, "nvmlDeviceGetUUID");
  need(f->memory, "nvmlDeviceGetMemoryInfo");
  need(f->capability, "nvmlDeviceGetCudaComputeCapability");
  if (!find(f->processes, "nvmlDeviceGetComputeRunningProcesses_v3"))
    find(f->processes, "nvmlDeviceGetComputeRunningProcesses_v2");
  if (!missing.empty()) {
    ::dlclose(f->library);
    return path + " is not an NVML this cdui can use: it lacks " + missing;
  }
  if (auto r = f->init(); r != nvml_success) {
    auto why = f->error(r);
    ::dlclose(f->library);
    return "the NVIDIA driver did not start: nvmlInit: " + why;
  }
  return std::shared_ptr<nvml>(new nvml(std::move(f)));
}

std::variant<std::shared_ptr<nvml>, std::string> nvml::shared() {
  // Once per library path: NVML is initialised once and kept for the process's life. A failure is
  // not kept: a driver that loads after this process started is found at the next look.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<nvml>> opened;
  auto path = nvml_library_path();
  std::lock_guard lock{mutex};
  if (auto found = opened.find(path); found != opened.end())
    return found->second;
  auto library = open(path);
  if (auto* ok = std::get_if<std::shared_ptr<nvml>>(&library))
    opened.emplace(path, *ok);
  return library;
}

nvml::nvml(std::unique_ptr<functions> f) : f_(std::move(f)) {}

nvml::~nvml() {
  // The library stays mapped: NVML's own threads may outlive a dlclose.
  f_->shutdown();
}

std::variant<std::vector<gpu_card>, std::string> nvml::cards() const {
  unsigned n = 0;
  if (auto r = f_->count(&n); r != nvml_success)
    return "nvmlDeviceGetCount: " + f_->error(r);
  std::vector<gpu_card> cards;
  for (unsigned i = 0; i < n && i < max_cards; ++i) {
    nvml_device d = nullptr;
    if (auto r = f_->by_index(i, &d); r != nvml_success)
      return "nvmlDeviceGetHandleByIndex(" + std::to_string(i) + "): " + f_->error(r);
    gpu_card card;
    card.index = i;
    char text[nvml_text_buffer] = {};
    if (f_->name(d, text, sizeof text) == nvml_success)
      card.name = text_of(text, sizeof text);
    char id[nvml_text_buffer] = {};
    if (auto r = f_->uuid(d, id, sizeof id); r != nvml_success)
      return "nvmlDeviceGetUUID(" + std::to_string(i) + "): " + f_->error(r);
    card.uuid = text_of(id, sizeof id);
    if (auto m = f_->memory_of(d))
      card.memory = *m;
    f_->capability(d, &card.compute_major, &card.compute_minor);
    card.processes = f_->processes_on(d);
    cards.push_back(std::move(card));
  }
  return cards;
}

std::optional<gpu_memory> nvml::memory(const std::string& uuid) const {
  nvml_device d = nullptr;
  if (uuid.empty() || f_->by_uuid(uuid.c_str(), &d) != nvml_success)
    return std::nullopt;
  return f_->memory_of(d);
}

std::optional<std::int64_t> nvml::held_by(const std::string& uuid, std::uint32_t pid) const {
  nvml_device d = nullptr;
  if (uuid.empty() || f_->by_uuid(uuid.c_str(), &d) != nvml_success)
    return std::nullopt;
  for (const auto& p : f_->processes_on(d))
    if (p.pid == pid && p.used_bytes >= 0)
      return p.used_bytes;
  return std::nullopt;
}

} // namespace cdui::devices
