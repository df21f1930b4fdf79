#include "runtime/nodes/dataset_files.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

#include <torch/torch.h>

#include "messages/json_text.hpp"

namespace cdui::runtime::nodes {

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in{line};
  std::string cell;
  while (std::getline(in, cell, ','))
    cells.push_back(cell);
  if (!line.empty() && line.back() == ',')
    cells.emplace_back();
  for (auto& c : cells) {
    c.erase(0, c.find_first_not_of(" \t\r\""));
    c.erase(c.find_last_not_of(" \t\r\"") + 1);
  }
  return cells;
}

/// The whole cell as a number, or nullopt ("1.5abc" is not a number).
std::optional<float> parse_number(const std::string& cell) {
  if (cell.empty())
    return std::nullopt;
  char* end = nullptr;
  auto value = std::strtof(cell.c_str(), &end);
  if (end != cell.c_str() + cell.size())
    return std::nullopt;
  return value;
}

/// Class ids for labels: the labels themselves when all are integers >= 0 (so every file of a task
/// numbers them alike; a file missing the top classes just has fewer), else the distinct labels in
/// sorted order (declare param classes to keep text labels alike across files).
std::pair<std::vector<std::int64_t>, std::int64_t> class_ids(const std::vector<std::string>& labels,
                                                             const std::vector<std::size_t>& rows,
                                                             const nlohmann::json& declared,
                                                             const std::string& path) {
  std::vector<std::int64_t> ids;
  if (!declared.empty()) {
    std::map<std::string, std::int64_t> index;
    for (const auto& name : declared)
      index.emplace(name.get<std::string>(), static_cast<std::int64_t>(index.size()));
    for (std::size_t i = 0; i < labels.size(); ++i) {
      auto found = index.find(labels[i]);
      if (found == index.end())
        throw node_error(path + " line " + std::to_string(rows[i]) + ": the label "
                         + shown(labels[i]) + " is not in param 'classes' ("
                         + json_text(declared) + ")");
      ids.push_back(found->second);
    }
    return {ids, static_cast<std::int64_t>(declared.size())};
  }
  bool integers = std::all_of(labels.begin(), labels.end(), [](const std::string& l) {
    return !l.empty() && l.size() < 10 && std::all_of(l.begin(), l.end(), ::isdigit);
  });
  if (integers) {
    for (const auto& l : labels)
      ids.push_back(std::stoll(l));
    return {ids, *std::max_element(ids.begin(), ids.end()) + 1};
  }
  std::map<std::string, std::int64_t> classes;
  for (const auto& l : labels)
    classes.emplace(l, 0);
  std::int64_t next = 0;
  for (auto& [name, id] : classes)
    id = next++;
  for (const auto& l : labels)
    ids.push_back(classes[l]);
  return {ids, next};
}

} // namespace

/// How often a CSV read looks whether its run was asked to stop: 8,192 rows took about 3 ms here.
constexpr std::size_t rows_between_stop_checks = 8192;

dataset_value csv(node_call& call) {
  auto file = open_data(call, "path", call.string_param("path"));
  auto path = "CSV " + file.quoted();
  auto& in = file.stream();
  std::string line;
  if (!std::getline(in, line))
    throw node_error("param 'path': " + path + " is empty");
  auto header = split_csv_line(line);
  if (header.size() < 2)
    throw node_error(path + " has no feature columns: it needs at least one feature column besides "
                     "the label column " + shown(header.empty() ? "" : header[0]));
  auto label_name = call.string_param("label_column");
  std::size_t label = header.size() - 1;
  if (!label_name.empty()) {
    auto it = std::find(header.begin(), header.end(), label_name);
    if (it == header.end())
      throw node_error("param 'label_column': " + path + " has no column " + shown(label_name));
    label = static_cast<std::size_t>(it - header.begin());
  }
  bool classify = call.string_param("task") == "classification";
  std::vector<float> features;
  std::vector<std::string> labels;
  std::vector<std::size_t> label_rows;
  std::size_t row = 1;
  while (std::getline(in, line)) {
    ++row;
    // A cancelled run's read stops here, not at the file's end: the rows read so far are dropped
    // with the run (a 2 GB file went on filling the server's memory for 38 s after its cancel).
    if (row % rows_between_stop_checks == 0 && call.stop_requested())
      throw node_error(path + ": the read stopped at line " + std::to_string(row) + ", the run was asked to stop");
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto cells = split_csv_line(line);
    if (cells.size() != header.size())
      throw node_error(path + " line " + std::to_string(row) + ": " + std::to_string(cells.size())
                       + " columns, the header has " + std::to_string(header.size()));
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c == label) {
        labels.push_back(cells[c]);
        label_rows.push_back(row);
        continue;
      }
      auto value = parse_number(cells[c]);
      if (!value)
        throw node_error(path + " line " + std::to_string(row) + ", column " + shown(header[c])
                         + ": " + shown(cells[c]) + " is not a number");
      features.push_back(*value);
    }
  }
  auto n = static_cast<std::int64_t>(labels.size());
  if (n == 0)
    throw node_error("param 'path': " + path + " has a header but no rows");
  auto f = static_cast<std::int64_t>(header.size()) - 1;
  dataset_value d;
  d.name = "csv";
  d.inputs = torch::tensor(features).reshape({n, f});
  d.sample_shape = {f};
  d.classification = classify;
  if (classify) {
    auto [ids, count] = class_ids(labels, label_rows, call.param("classes"), path);
    d.targets = torch::tensor(ids, torch::kInt64);
    d.num_classes = count;
  } else {
    std::vector<float> values;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      auto value = parse_number(labels[i]);
      if (!value)
        throw node_error(path + " line " + std::to_string(label_rows[i]) + ": the label "
                         + shown(labels[i]) + " is not a number (task is regression)");
      values.push_back(*value);
    }
    d.targets = torch::tensor(values).reshape({n, 1});
  }
  return d;
}

} // namespace cdui::runtime::nodes
