#pragma once
// The Dataset node's parts that read files, internal to it: datasets.cpp (Fashion-MNIST, the
// generated datasets, the node itself), idx_file.cpp (an IDX file, gzipped or not) and
// csv_dataset.cpp (a CSV file).

#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

#include "runtime/file_access.hpp"
#include "runtime/node_call.hpp"
#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

/// A message's text for a cell, a label or a column name of a data file: any bytes, shown safely.
[[nodiscard]] std::string shown(const std::string& data);

/// A data file the rules allow this run to read, opened; refused with a node_error otherwise
/// (`hint` added to the refusal).
[[nodiscard]] input_file open_data(node_call& call, const std::string& param, const std::string& path,
                                   const std::string& hint = "");

/// Parses an IDX file (magic 0x00000800 | rank, big-endian dims, then uint8 data) into a uint8
/// tensor, inflating the data straight into the tensor's storage: the file is read once and its
/// bytes are not copied (by libdeflate in one call when it can, read_whole_idx; else by zlib in
/// pieces). A damaged file is read to its end first, so that a stream zlib cannot decompress says
/// so before what its header says is wrong.
[[nodiscard]] at::Tensor read_idx(input_file file, std::int64_t limit);

/// The Dataset named "csv": the file at param `path`, its label in `label_column` (else the last
/// column), classes or values as param `task` says. A run asked to stop stops the read.
[[nodiscard]] dataset_value csv(node_call& call);

} // namespace cdui::runtime::nodes
