#pragma once

#include <string>
#include <string_view>
#include <tuple>

namespace cdui {

/// The key of one device slot: who offers the device and the device, by the offerer's own name.
/// This server's devices have no offerer ("cuda:0"); a worker's are written "<worker>/<device>"
/// ("gpu-box/cuda:1"). It names a FIFO of the run queue, a run's stored queue_key and a slot in
/// /api/status. A worker name holds no '/' (policy::is_valid_worker_name), nor does a device.
struct slot_key {
  std::string offerer;  // a worker's name; empty: this server
  std::string device;   // cpu, cuda:0, sim:1, as its offerer names it

  [[nodiscard]] bool local() const { return offerer.empty(); }
  /// "device" or "offerer/device".
  [[nodiscard]] std::string str() const;
  /// Reads str()'s form back: the part before the first '/' is the offerer. A text without '/' is
  /// a local key (also the queues "any" and "one-shot" of runs not placed yet).
  [[nodiscard]] static slot_key parse(std::string_view text);
  /// Whether `text` is a key of `offerer`'s slots.
  [[nodiscard]] static bool offered_by(std::string_view text, std::string_view offerer);

  friend bool operator==(const slot_key& a, const slot_key& b) {
    return a.offerer == b.offerer && a.device == b.device;
  }
  friend bool operator!=(const slot_key& a, const slot_key& b) { return !(a == b); }
  friend bool operator<(const slot_key& a, const slot_key& b) {
    return std::tie(a.offerer, a.device) < std::tie(b.offerer, b.device);
  }
};

} // namespace cdui
