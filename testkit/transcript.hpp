#pragma once
// The docs' example sessions as checks: each ```console block of a Markdown file is a list of
// `$ command` lines, each followed by the lines the docs show it printing. docs_test runs the
// commands and compares what they print with those lines, so the README's tour and
// docs/tutorial.md stay true. Plain C++, unit-tested in unit/apps/transcript_test.cpp.
//
// How a shown line matches a printed one: both are normalized first (run ids, numbers and runs of
// spaces stand for any of their kind, see normalized()); then "…" inside a shown line stands for
// any text, and a shown line that is only "…" stands for any number of printed lines.

#include <cstddef>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace cdui::test {

/// One `$ command` of a console block and the lines the docs show it printing.
struct transcript_step {
  std::string command;
  std::vector<std::string> shown;
  /// The Markdown line of the command (1-based), for a failure's message.
  int line = 0;
};

/// The steps of every ```console block of `markdown`, in order.
inline std::vector<transcript_step> console_steps(const std::string& markdown) {
  std::vector<transcript_step> steps;
  std::istringstream in{markdown};
  std::string line;
  bool inside = false;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.rfind("```", 0) == 0) {
      inside = !inside && line == "```console";
      continue;
    }
    if (!inside)
      continue;
    if (line.rfind("$ ", 0) == 0)
      steps.push_back({line.substr(2), {}, number});
    else if (!steps.empty())
      steps.back().shown.push_back(line);
  }
  return steps;
}

/// `line` with what differs from one run to the next made alike: a word of 8 hex digits (a run
/// id) and every number become "#" (one token for both: a drawn seed of 8 digits reads as a
/// hex word, a run id of digits only as a number), a run of spaces one space (columns sized to
/// their data), and trailing spaces go.
inline std::string normalized(const std::string& line) {
  static const std::regex id{R"(\b[0-9a-f]{8}\b)"};
  static const std::regex number{R"(\d+(\.\d+)?(e[-+]?\d+)?)"};
  static const std::regex spaces{" +"};
  auto out = std::regex_replace(line, id, "#");
  out = std::regex_replace(out, number, "#");
  out = std::regex_replace(out, spaces, " ");
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

inline const std::string ellipsis = "\u2026";

/// Whether printed `line` matches `shown` (both normalized here): "…" in `shown` stands for any
/// text.
inline bool line_matches(const std::string& shown, const std::string& line) {
  auto pattern = normalized(shown);
  auto text = normalized(line);
  std::vector<std::string> parts;
  for (std::size_t at = 0;;) {
    auto next = pattern.find(ellipsis, at);
    parts.push_back(pattern.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos)
      break;
    at = next + ellipsis.size();
  }
  if (parts.size() == 1)
    return pattern == text;
  if (text.compare(0, parts.front().size(), parts.front()) != 0)
    return false;
  std::size_t at = parts.front().size();
  for (std::size_t i = 1; i + 1 < parts.size(); ++i) {
    auto found = text.find(parts[i], at);
    if (found == std::string::npos)
      return false;
    at = found + parts[i].size();
  }
  const auto& last = parts.back();
  return text.size() >= at + last.size() && text.compare(text.size() - last.size(), last.size(), last) == 0;
}

/// Whether `printed` matches `shown` line by line (a shown "…" line takes any number of printed
/// lines); nullopt when it does, else the first shown line that nothing matched.
inline std::optional<std::string> transcript_mismatch(const std::vector<std::string>& shown,
                                                      const std::vector<std::string>& printed) {
  // matched[i][j]: shown[i..] matches printed[j..] (0 unknown, 1 yes, 2 no).
  std::vector<std::vector<char>> memo(shown.size() + 1, std::vector<char>(printed.size() + 1, 0));
  std::size_t furthest = 0;
  auto match = [&](auto&& self, std::size_t i, std::size_t j) -> bool {
    furthest = std::max(furthest, i);
    if (i == shown.size())
      return j == printed.size();
    auto& m = memo[i][j];
    if (m != 0)
      return m == 1;
    bool ok = shown[i] == ellipsis
                ? self(self, i + 1, j) || (j < printed.size() && self(self, i, j + 1))
                : j < printed.size() && line_matches(shown[i], printed[j]) && self(self, i + 1, j + 1);
    m = ok ? 1 : 2;
    return ok;
  };
  if (match(match, 0, 0))
    return std::nullopt;
  return furthest < shown.size() ? "no printed line matches the shown line '" + shown[furthest] + "'"
                                 : std::string{"it printed more lines than the docs show"};
}

/// `text` split into lines (no trailing empty line).
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

} // namespace cdui::test
