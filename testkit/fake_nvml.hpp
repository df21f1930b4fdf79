#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testkit/env.hpp"
#include "testkit/home.hpp"

namespace cdui::test {

/// One card the fake NVML describes (testkit/fake_nvml.cpp).
struct fake_gpu {
  std::string name;
  std::string uuid;
  std::int64_t total_bytes = 0;
  std::int64_t used_bytes = 0;
  std::string compute = "9.0";
  /// pid -> bytes it holds on the card.
  std::vector<std::pair<unsigned, std::int64_t>> processes;
};

/// While it lives, this process's NVML is the fake one (CDUI_FAKE_NVML_LIBRARY, which a target
/// gets by linking cdui_testkit_nvml), describing the cards given; set() changes them, and every
/// later NVML call sees the change, as a real card's figures change while others use it.
class fake_nvml {
public:
  explicit fake_nvml(const std::vector<fake_gpu>& cards)
    : library_("CODEFYUI_NVML_LIBRARY", CDUI_FAKE_NVML_LIBRARY),
      cards_("CDUI_FAKE_NVML", (dir_.path() / "cards").string()) {
    set(cards);
  }

  void set(const std::vector<fake_gpu>& cards) {
    auto temp = dir_.path() / "cards.tmp";
    {
      std::ofstream out{temp};
      for (const auto& c : cards) {
        out << c.name << '|' << c.uuid << '|' << c.total_bytes << '|' << c.used_bytes << '|' << c.compute << '|';
        for (std::size_t i = 0; i < c.processes.size(); ++i)
          out << (i == 0 ? "" : ",") << c.processes[i].first << '=' << c.processes[i].second;
        out << '\n';
      }
    }
    std::filesystem::rename(temp, dir_.path() / "cards");
  }

  [[nodiscard]] static std::string library() { return CDUI_FAKE_NVML_LIBRARY; }

private:
  temp_home dir_;
  scoped_env library_;
  scoped_env cards_;
};

} // namespace cdui::test
