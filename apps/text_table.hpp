#pragma once

#include <string>
#include <vector>

namespace cdui::apps {

/// `s` safe to print in a column: UTF-8, and no control character that moves the cursor (a name
/// or an error may hold any bytes): each one is '?'.
[[nodiscard]] std::string printable(const std::string& s);

/// Rows of cells under a header, each column padded to its widest cell (counted in characters, so
/// a worker's device "gpu-box/cuda:1" or a name in UTF-8 keeps the columns aligned), two spaces
/// between columns, no padding after the last one. Cells are made printable().
[[nodiscard]] std::string format_table(const std::vector<std::vector<std::string>>& rows);

/// `s` as one field of a CSV line (RFC 4180): quoted, with its quotes doubled, when it holds a
/// comma, a quote or a line break; as it is otherwise.
[[nodiscard]] std::string csv_field(const std::string& s);

} // namespace cdui::apps
