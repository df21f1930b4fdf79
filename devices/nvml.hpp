#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cdui::devices {

/// A process that holds memory on a card, as the driver counts it (any user's, cdui's or not).
struct gpu_process {
  std::uint32_t pid = 0;
  /// -1 when the driver does not say (no permission to see another user's figure).
  std::int64_t used_bytes = 0;
};

/// A card's memory as the driver counts it: what every process holds, as nvidia-smi shows it.
struct gpu_memory {
  std::int64_t total_bytes = 0;
  std::int64_t free_bytes = 0;
  std::int64_t used_bytes = 0;
};

/// One NVIDIA card, as NVML describes it.
struct gpu_card {
  /// NVML's index: the driver's order (PCI bus), not always CUDA's.
  unsigned index = 0;
  std::string name;
  /// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": the card whoever offers it.
  std::string uuid;
  gpu_memory memory;
  int compute_major = 0;
  int compute_minor = 0;
  /// The processes holding memory on it (compute contexts).
  std::vector<gpu_process> processes;
};

/// The NVIDIA driver's management library, loaded at run time (dlopen), so that a binary on a
/// machine without the driver still runs and says why it sees no CUDA card. Thread-safe: NVML is.
class nvml {
public:
  /// The library at `path` ("libnvidia-ml.so.1" finds the driver's), initialised; else why not,
  /// in a sentence ("no NVIDIA driver: libnvidia-ml.so.1 ...").
  [[nodiscard]] static std::variant<std::shared_ptr<nvml>, std::string> open(const std::string& path);

  /// This process's NVML, opened once: $CODEFYUI_NVML_LIBRARY when set, else the driver's (a
  /// failure is tried again at the next call).
  [[nodiscard]] static std::variant<std::shared_ptr<nvml>, std::string> shared();

  ~nvml();
  nvml(const nvml&) = delete;
  nvml& operator=(const nvml&) = delete;

  /// Every card the driver has; else the error NVML gave, in a sentence.
  [[nodiscard]] std::variant<std::vector<gpu_card>, std::string> cards() const;

  /// The memory of the card with `uuid` now (none: no such card, or NVML failed).
  [[nodiscard]] std::optional<gpu_memory> memory(const std::string& uuid) const;

  /// What process `pid` holds on the card with `uuid` now; none when the driver does not list it
  /// there (it holds nothing, or this process runs in a PID namespace of its own, as in a container,
  /// and the driver lists the host's pids) or does not give its figure.
  [[nodiscard]] std::optional<std::int64_t> held_by(const std::string& uuid, std::uint32_t pid) const;

  struct functions;

private:
  explicit nvml(std::unique_ptr<functions> f);
  std::unique_ptr<functions> f_;
};

/// The library $CODEFYUI_NVML_LIBRARY names (a test double, or a driver outside the loader's path),
/// else the driver's soname.
[[nodiscard]] std::string nvml_library_path();

/// No CUDA context takes less of a card than this (a few hundred MiB on any card CUDA 13 runs): a
/// smaller figure is none being created (one existed already) or a misreading.
inline constexpr std::int64_t min_cuda_context_bytes = std::int64_t{64} << 20;

/// The environment variable that names another NVML library.
inline constexpr const char* nvml_library_env = "CODEFYUI_NVML_LIBRARY";

} // namespace cdui::devices
