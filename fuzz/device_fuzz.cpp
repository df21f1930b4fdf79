// libFuzzer target: device strings (devices/device.hpp). The first two bytes describe the host
// (CUDA cards and the current one, MPS, sim cards); the rest is the device string a graph or a
// run's options would carry. Checks the fallback rules: a device always resolves to one this host
// has, a valid request is honoured without a warning, and a resolved name resolves to itself.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "devices/device.hpp"

namespace {

using namespace cdui::devices;

[[noreturn]] void fail(const std::string& what, std::string_view text) {
  std::fprintf(stderr, "device_fuzz: %s (device string of %zu bytes)\n", what.c_str(), text.size());
  std::abort();
}

/// Whether `name` is a device of `host`, in canonical form.
bool host_has(const std::string& name, const host_devices& host) {
  if (name == "cpu")
    return true;
  if (name == "mps:0")
    return host.has_mps;
  for (int i = 0; i < host.cuda_count; ++i)
    if (name == "cuda:" + std::to_string(i))
      return true;
  for (int i = 0; i < host.sim_count; ++i)
    if (name == "sim:" + std::to_string(i))
      return true;
  return false;
}

int count_of(device_kind kind, const host_devices& host) {
  switch (kind) {
  case device_kind::cuda: return host.cuda_count;
  case device_kind::mps: return host.has_mps ? 1 : 0;
  case device_kind::sim: return host.sim_count;
  default: return 1;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  host_devices host;
  host.cuda_count = data[0] % 5;
  host.current_cuda = host.cuda_count == 0 ? 0 : (data[0] >> 4) % host.cuda_count;
  host.has_mps = (data[1] & 1) != 0;
  host.sim_count = (data[1] >> 1) % 4;
  host.sim_total_bytes.assign(static_cast<std::size_t>(host.sim_count), std::int64_t{1} << 30);
  std::string_view text{reinterpret_cast<const char*>(data) + 2, size - 2};

  auto parsed = parse_device(text);
  auto* spec = std::get_if<device_spec>(&parsed);
  if (spec == nullptr) {
    if (std::get<device_parse_error>(parsed).message.empty())
      fail("a refusal without a message", text);
    return 0;
  }
  if (spec->text != text)
    fail("the spec does not keep the text", text);
  if (spec->malformed && spec->index)
    fail("malformed with an index", text);

  auto resolved = resolve_device(*spec, host);
  if (!host_has(resolved.name, host))
    fail("resolved to '" + resolved.name + "', which the host does not have", text);
  if (spec->kind == device_kind::cpu && (resolved.name != "cpu" || resolved.fallback_warning))
    fail("cpu did not resolve to cpu without a warning", text);
  if (spec->index && *spec->index < count_of(spec->kind, host) && resolved.fallback_warning)
    fail("an index the host has got a fallback warning", text);
  if (resolved.fallback_warning && resolved.fallback_warning->empty())
    fail("an empty fallback warning", text);

  // A resolved name is canonical: it parses, and resolves to itself without a warning.
  auto again = parse_device(resolved.name);
  auto* again_spec = std::get_if<device_spec>(&again);
  if (again_spec == nullptr || again_spec->malformed)
    fail("the resolved name '" + resolved.name + "' does not parse", text);
  auto twice = resolve_device(*again_spec, host);
  if (twice.name != resolved.name || twice.fallback_warning)
    fail("the resolved name '" + resolved.name + "' does not resolve to itself", text);
  if (kind_of(resolved.name).empty())
    fail("a resolved name without a kind", text);
  return 0;
}
