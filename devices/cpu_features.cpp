#include "devices/cpu_features.hpp"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace cdui::devices {

namespace {

constexpr std::string_view bf16_instructions[] = {"avx512_bf16", "amx_bf16"};

std::string joined(const std::vector<std::string>& items, const char* last) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? last : ", ") + items[i];
  return out;
}

/// The words of the `flags` lines of /proc/cpuinfo's text.
std::set<std::string> flags_of(std::string_view cpuinfo) {
  std::set<std::string> flags;
  std::istringstream lines{std::string{cpuinfo}};
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("flags", 0) != 0)
      continue;
    std::istringstream words{line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1)};
    for (std::string w; words >> w;)
      flags.insert(w);
  }
  return flags;
}

/// /proc/cpuinfo's text, read once.
const std::string& cpuinfo_text() {
  static const std::string text = [] {
    std::ifstream in{"/proc/cpuinfo"};
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }();
  return text;
}

} // namespace

std::string bf16_support::text() const {
  return native() ? "native (" + joined(has, " and ") + ")" : "not native (no " + joined(lacks, " or ") + ")";
}

bf16_support bf16_support_of(std::string_view cpuinfo) {
  auto flags = flags_of(cpuinfo);
  bf16_support s;
  for (auto i : bf16_instructions)
    (flags.count(std::string{i}) ? s.has : s.lacks).emplace_back(i);
  return s;
}

const bf16_support& cpu_bf16_support() {
  static const bf16_support support = bf16_support_of(cpuinfo_text());
  return support;
}

bool avx512_of(std::string_view cpuinfo) {
  return flags_of(cpuinfo).count("avx512f") > 0;
}

bool isa_cap_allows_avx512(std::string_view cap) {
  std::string upper;
  for (char c : cap)
    upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper.empty() || upper == "ALL" || upper.rfind("AVX512", 0) == 0 || upper.rfind("AVX10", 0) == 0
         || upper.rfind("AMX", 0) == 0;
}

bool cpu_has_avx512() {
  static const bool has = [] {
    const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (cap == nullptr)
      cap = std::getenv("DNNL_MAX_CPU_ISA");
    return avx512_of(cpuinfo_text()) && isa_cap_allows_avx512(cap == nullptr ? "" : cap);
  }();
  return has;
}

} // namespace cdui::devices
