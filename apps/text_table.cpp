#include "apps/text_table.hpp"

#include <algorithm>

#include "messages/text.hpp"

namespace cdui::apps {

std::string printable(const std::string& s) {
  auto text = text::to_utf8(s);
  for (auto& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return text;
}

std::string format_table(const std::vector<std::vector<std::string>>& shown) {
  auto rows = shown;
  for (auto& row : rows)
    for (auto& cell : row)
      cell = printable(cell);
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths.resize(std::max(widths.size(), row.size()));
      widths[c] = std::max(widths[c], text::characters(row[c]));
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size())
        line += std::string(widths[c] - text::characters(row[c]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s)
    out += c == '"' ? std::string{"\"\""} : std::string(1, c);
  return out + "\"";
}

} // namespace cdui::apps
