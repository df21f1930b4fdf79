// Dataset node: Fashion-MNIST from Debian's gzipped IDX files, generated toy sets, and CSV files.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include <torch/torch.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "messages/json_text.hpp"
#include "messages/text.hpp"
#include "runtime/file_access.hpp"
#include "runtime/node_call.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

namespace {

/// Fashion-MNIST's pixel mean and standard deviation over the training split, after /255.
constexpr double fashion_mnist_mean = 0.2860;
constexpr double fashion_mnist_std = 0.3530;

/// A message's text for a cell, a label or a column name of a data file: any bytes, shown safely.
std::string shown(const std::string& data) {
  return text::quoted(data, 80);
}

/// A data file the rules allow this run to read, opened; refused with a node_error otherwise.
input_file open_data(node_call& call, const std::string& param, const std::string& path,
                     const std::string& hint = "") {
  auto file = file_access::for_run(call.run()).open(file_use::data, param, path);
  if (!file.is_open())
    throw node_error(file.refusal() + hint);
  return file;
}

/// A gzipped file read in pieces straight into the caller's memory (zlib inflates into the buffer
/// it is given when the request is large, so no byte is copied on the way). zlib reads a file that
/// is not gzip as it is.
class gzip_reader {
public:
  explicit gzip_reader(input_file file) : path_(file.quoted()) {
    int fd = file.release();
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0)
      file_bytes_ = static_cast<std::size_t>(st.st_size);
    gz_ = gzdopen(fd, "rb");
    if (gz_ == nullptr) {
      ::close(fd);
      throw node_error("cannot read " + path_);
    }
  }
  ~gzip_reader() { gzclose(gz_); }
  gzip_reader(const gzip_reader&) = delete;
  gzip_reader& operator=(const gzip_reader&) = delete;

  /// The file's name, quoted, for messages.
  [[nodiscard]] const std::string& path() const { return path_; }

  /// The most bytes the data can inflate to (0: unknown): deflate shrinks at most 1032:1 (zlib's
  /// FAQ), and a plain file is its own size.
  [[nodiscard]] std::size_t most_bytes() const {
    constexpr std::size_t deflate_max_ratio = 1032;
    return file_bytes_ > std::numeric_limits<std::size_t>::max() / deflate_max_ratio
             ? std::numeric_limits<std::size_t>::max()
             : file_bytes_ * deflate_max_ratio;
  }

  /// Reads up to n bytes into `out`: fewer only where the data ends.
  std::size_t read(void* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      auto piece = static_cast<unsigned>(std::min<std::size_t>(n - got, std::size_t{1} << 30));
      int r = gzread(gz_, static_cast<char*>(out) + got, piece);
      if (r < 0)
        throw node_error("cannot decompress " + path_);
      if (r == 0)
        break;
      got += static_cast<std::size_t>(r);
    }
    return got;
  }

  /// Reads the rest of the data and forgets it: how many bytes there were.
  std::size_t skip_rest() {
    std::vector<char> scratch(1 << 16);
    std::size_t total = 0;
    while (auto got = read(scratch.data(), scratch.size()))
      total += got;
    return total;
  }

private:
  std::string path_;
  std::size_t file_bytes_ = 0;
  gzFile gz_ = nullptr;
};

/// libdeflate (Debian's libdeflate0), when this machine has it: it inflates a whole gzip member in
/// one call about 2.5 times as fast as zlib's gzread (docs/benchmarks.md). It is loaded when first
/// needed, so it is no build dependency (Debian has no libdeflate-dev here); without it, or with
/// CODEFYUI_INFLATE=zlib, zlib reads every file. Its three functions are declared as its
/// documented C API gives them.
class libdeflate {
public:
  /// The library; null when it is not there or CODEFYUI_INFLATE is zlib.
  static const libdeflate* get() {
    static const auto loaded = [] { return load(); }();
    const char* choice = std::getenv("CODEFYUI_INFLATE");
    return choice != nullptr && std::string_view{choice} == "zlib" ? nullptr : loaded.get();
  }

  /// Inflates `in`, one whole gzip member, into `out` of exactly `size` bytes; false when the data
  /// is damaged, larger or smaller, or followed by more.
  bool inflate(const std::vector<unsigned char>& in, void* out, std::size_t size) const {
    auto* d = alloc_();
    if (d == nullptr)
      return false;
    std::size_t used = 0, made = 0;
    auto result = decompress_(d, in.data(), in.size(), out, size, &used, &made);
    free_(d);
    return result == 0 && used == in.size() && made == size;  // 0: LIBDEFLATE_SUCCESS
  }

private:
  using alloc_fn = void* (*)();
  using decompress_fn = int (*)(void*, const void*, std::size_t, void*, std::size_t, std::size_t*, std::size_t*);
  using free_fn = void (*)(void*);

  static std::unique_ptr<libdeflate> load() {
    void* lib = ::dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr)
      return nullptr;
    auto l = std::make_unique<libdeflate>();
    l->alloc_ = reinterpret_cast<alloc_fn>(::dlsym(lib, "libdeflate_alloc_decompressor"));
    l->decompress_ = reinterpret_cast<decompress_fn>(::dlsym(lib, "libdeflate_gzip_decompress_ex"));
    l->free_ = reinterpret_cast<free_fn>(::dlsym(lib, "libdeflate_free_decompressor"));
    if (l->alloc_ == nullptr || l->decompress_ == nullptr || l->free_ == nullptr)
      return nullptr;  // the library stays loaded: cheap, and it may be in use elsewhere
    return l;
  }

  alloc_fn alloc_ = nullptr;
  decompress_fn decompress_ = nullptr;
  free_fn free_ = nullptr;
};

std::uint32_t big_endian_u32(const unsigned char* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16)
         | (std::uint32_t{bytes[2]} << 8) | bytes[3];
}

/// The IDX dimensions checked against a file of `size` bytes with a header of `header` bytes; the
/// element count. The count is checked against the bytes there are at each step, so that no
/// product of dimensions can overflow (here, or in the tensor's strides).
std::size_t idx_count(const std::string& path, const std::vector<std::int64_t>& dims,
                      std::size_t header, std::size_t size) {
  std::size_t count = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    auto d = static_cast<std::size_t>(dims[i]);
    if (d == 0)
      throw node_error(path + " has no samples: its dimension " + std::to_string(i + 1) + " is 0");
    if (count > (size - header) / d)
      throw node_error(path + " is truncated: its dimensions say more bytes than the file's "
                       + std::to_string(size));
    count *= d;
  }
  if (size != header + count)
    throw node_error(path + " is truncated: expected " + std::to_string(header + count)
                     + " bytes, found " + std::to_string(size));
  return count;
}

/// The IDX file of descriptor `fd` inflated by libdeflate in one call, into one tensor whose tail
/// is the data (no copy), when libdeflate is there and the file is one gzip member holding a whole
/// IDX file of unsigned bytes. nullopt otherwise: zlib then reads it, and says what is wrong.
std::optional<at::Tensor> read_whole_idx(int fd, std::int64_t limit) {
  const auto* inflater = libdeflate::get();
  struct stat st {};
  if (inflater == nullptr || ::fstat(fd, &st) != 0 || st.st_size < 18)
    return std::nullopt;
  std::vector<unsigned char> packed(static_cast<std::size_t>(st.st_size));
  for (std::size_t got = 0; got < packed.size();) {
    auto n = ::pread(fd, packed.data() + got, packed.size() - got, static_cast<off_t>(got));
    if (n <= 0)
      return std::nullopt;
    got += static_cast<std::size_t>(n);
  }
  if (packed[0] != 0x1f || packed[1] != 0x8b)
    return std::nullopt;
  // The gzip trailer's ISIZE: the inflated size modulo 2^32, exact for files under 4 GiB; a larger
  // one fails the size check below and goes to zlib.
  const auto* tail = packed.data() + packed.size() - 4;
  std::size_t size = std::uint32_t{tail[0]} | (std::uint32_t{tail[1]} << 8) | (std::uint32_t{tail[2]} << 16)
                     | (std::uint32_t{tail[3]} << 24);
  if (size < 8)
    return std::nullopt;
  auto all = at::empty({static_cast<std::int64_t>(size)}, at::kByte);
  if (!inflater->inflate(packed, all.data_ptr(), size))
    return std::nullopt;
  const auto* bytes = all.data_ptr<std::uint8_t>();
  std::size_t rank = bytes[3];
  std::size_t header = 4 + 4 * rank;
  if (bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08 || rank == 0 || size < header)
    return std::nullopt;
  std::vector<std::int64_t> dims;
  std::size_t count = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    auto d = static_cast<std::size_t>(big_endian_u32(bytes + 4 + 4 * i));
    if (d == 0 || count > (size - header) / d)
      return std::nullopt;
    count *= d;
    dims.push_back(static_cast<std::int64_t>(d));
  }
  if (header + count != size)
    return std::nullopt;
  auto data = all.narrow(0, static_cast<std::int64_t>(header), static_cast<std::int64_t>(count)).view(dims);
  if (limit > 0 && limit < dims[0])
    data = data.narrow(0, 0, limit);
  return data;
}

/// Parses an IDX file (magic 0x00000800 | rank, big-endian dims, then uint8 data) into a uint8
/// tensor, inflating the data straight into the tensor's storage: the file is read once and its
/// bytes are not copied (by libdeflate in one call when it can, read_whole_idx; else by zlib in
/// pieces). A damaged file is read to its end first, so that a stream zlib cannot decompress says
/// so before what its header says is wrong.
at::Tensor read_idx(input_file file, std::int64_t limit) {
  if (auto whole = read_whole_idx(file.descriptor(), limit))
    return *whole;
  ::lseek(file.descriptor(), 0, SEEK_SET);
  gzip_reader in{std::move(file)};
  const auto& path = in.path();
  auto fail = [&](const std::string& why) {
    in.skip_rest();
    throw node_error(path + why);
  };
  unsigned char magic[4];
  auto got = in.read(magic, sizeof magic);
  if (got < 4 || magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08)
    fail(" is not an IDX file of unsigned bytes");
  std::size_t rank = magic[3];
  if (rank == 0)
    fail(" has no dimensions (an IDX dataset needs at least its samples')");
  auto header = 4 + 4 * rank;
  std::vector<unsigned char> dim_bytes(4 * rank);
  if (in.read(dim_bytes.data(), dim_bytes.size()) < dim_bytes.size())
    fail(" is truncated: its header says " + std::to_string(rank)
         + " dimensions, but the file ends within them");
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < rank; ++i)
    dims.push_back(big_endian_u32(dim_bytes.data() + 4 * i));
  // The count the dimensions say, if the file can hold it at all: else the file is read to its
  // end for its size, which idx_count turns into the message.
  auto can_hold = in.most_bytes();
  std::size_t count = 1;
  for (auto d : dims)
    count = d == 0 || count > can_hold / static_cast<std::size_t>(d) ? can_hold + 1
                                                                     : count * static_cast<std::size_t>(d);
  if (count > can_hold) {
    idx_count(path, dims, header, header + in.skip_rest());
    throw node_error(path + " is truncated: its dimensions say more bytes than the file holds");
  }
  auto all = at::empty({static_cast<std::int64_t>(count)}, at::kByte);
  auto data = in.read(all.data_ptr(), count);
  if (data == count)
    data += in.skip_rest();
  idx_count(path, dims, header, header + data);
  all = all.view(dims);
  if (limit > 0 && limit < dims[0])
    all = all.narrow(0, 0, limit);
  return all;
}

/// Fashion-MNIST's pixels as the models see them: (x / 255 - mean) / std in float32, N x 1 x H x W.
/// Computed as a table of the 256 byte values by those same tensor operations, then looked up in one
/// pass, so each pixel is bit for bit what the element-wise expression gives, without its four
/// image-sized temporaries.
at::Tensor normalised_pixels(const at::Tensor& images) {
  auto levels = torch::arange(256, torch::kInt64).to(torch::kUInt8);
  auto table = ((levels.to(torch::kFloat32) / 255.0 - fashion_mnist_mean) / fashion_mnist_std).contiguous();
  auto bytes = images.contiguous();
  auto out = at::empty({images.size(0), 1, images.size(1), images.size(2)}, at::kFloat);
  const auto* from = bytes.data_ptr<std::uint8_t>();
  const auto* lookup = table.data_ptr<float>();
  auto* to = out.data_ptr<float>();
  for (std::int64_t i = 0, n = bytes.numel(); i < n; ++i)
    to[i] = lookup[from[i]];
  return out;
}

dataset_value fashion_mnist(node_call& call) {
  auto root = call.string_param("root");
  auto prefix = call.string_param("split") == "test" ? "t10k" : "train";
  auto limit = call.int_param("limit");
  std::string hint = root == fashion_mnist_root
                       ? " (is Debian's dataset-fashion-mnist package installed?)" : "";
  auto images = read_idx(open_data(call, "root", root + "/" + prefix + "-images-idx3-ubyte.gz", hint),
                         limit);
  auto labels = read_idx(open_data(call, "root", root + "/" + prefix + "-labels-idx1-ubyte.gz", hint),
                         limit);
  if (images.dim() != 3 || labels.dim() != 1 || images.size(0) != labels.size(0)) {
    std::ostringstream shapes;
    shapes << "param 'root': " << text::quoted(root) << " holds " << prefix << "-images of shape "
           << images.sizes() << " and " << prefix << "-labels of shape " << labels.sizes()
           << "; they must be N x height x width and N";
    throw node_error(shapes.str());
  }
  dataset_value d;
  d.name = "fashion_mnist";
  d.inputs = normalised_pixels(images);
  d.targets = labels.to(torch::kInt64);
  d.num_classes = 10;
  d.sample_shape = {1, images.size(1), images.size(2)};
  return d;
}

/// A generator for one dataset node: the run seed, the dataset's name and split, so a train and a
/// test split of the same toy set differ and each is the same on every run with that seed.
at::Generator dataset_rng(node_call& call) {
  auto key = call.string_param("name") + "/" + call.string_param("split");
  auto seed = call.run().seed ^ (std::hash<std::string>{}(key) * 0x9E3779B97F4A7C15ULL);
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

/// Shuffles rows of x and y together.
void shuffle_rows(at::Tensor& x, at::Tensor& y, at::Generator& gen) {
  auto perm = torch::randperm(x.size(0), gen, torch::kInt64);
  x = x.index_select(0, perm);
  y = y.index_select(0, perm);
}

dataset_value two_class_toy(node_call& call, bool moons) {
  auto gen = dataset_rng(call);
  auto n = call.int_param("n_samples");
  auto noise = call.number_param("noise");
  auto n_out = n / 2;
  auto n_in = n - n_out;
  auto t_out = torch::linspace(0, M_PI, n_out, torch::kFloat64);
  auto t_in = torch::linspace(0, M_PI, n_in, torch::kFloat64);
  at::Tensor outer, inner;
  if (moons) {
    outer = torch::stack({torch::cos(t_out), torch::sin(t_out)}, 1);
    inner = torch::stack({1 - torch::cos(t_in), 1 - torch::sin(t_in) - 0.5}, 1);
  } else {
    auto t2_out = torch::linspace(0, 2 * M_PI, n_out + 1, torch::kFloat64).narrow(0, 0, n_out);
    auto t2_in = torch::linspace(0, 2 * M_PI, n_in + 1, torch::kFloat64).narrow(0, 0, n_in);
    auto factor = call.number_param("factor");
    outer = torch::stack({torch::cos(t2_out), torch::sin(t2_out)}, 1);
    inner = torch::stack({torch::cos(t2_in), torch::sin(t2_in)}, 1) * factor;
  }
  auto x = torch::cat({outer, inner}, 0);
  x = x + noise * torch::randn(x.sizes(), gen, torch::kFloat64);
  auto y = torch::cat({torch::zeros({n_out}, torch::kInt64), torch::ones({n_in}, torch::kInt64)});
  shuffle_rows(x, y, gen);
  dataset_value d;
  d.name = moons ? "moons" : "circles";
  d.inputs = x.to(torch::kFloat32);
  d.targets = y;
  d.num_classes = 2;
  d.sample_shape = {2};
  return d;
}

dataset_value blobs(node_call& call) {
  auto gen = dataset_rng(call);
  auto n = call.int_param("n_samples");
  auto k = call.int_param("n_classes");
  auto f = call.int_param("n_features");
  auto centers = torch::rand({k, f}, gen, torch::kFloat64) * 20.0 - 10.0;
  auto y = torch::arange(n, torch::kInt64).remainder(k);
  auto x = centers.index_select(0, y)
           + call.number_param("cluster_std") * torch::randn({n, f}, gen, torch::kFloat64);
  shuffle_rows(x, y, gen);
  dataset_value d;
  d.name = "blobs";
  d.inputs = x.to(torch::kFloat32);
  d.targets = y;
  d.num_classes = k;
  d.sample_shape = {f};
  return d;
}

dataset_value regression(node_call& call) {
  auto gen = dataset_rng(call);
  auto n = call.int_param("n_samples");
  auto f = call.int_param("n_features");
  auto x = torch::randn({n, f}, gen, torch::kFloat64);
  // The same true weights for every split of a run: drawn from a generator that ignores the split.
  auto w_gen = at::make_generator<at::CPUGeneratorImpl>(call.run().seed + 1);
  auto w = torch::randn({f, 1}, w_gen, torch::kFloat64) / std::sqrt(static_cast<double>(f));
  auto y = x.matmul(w) + call.number_param("noise") * torch::randn({n, 1}, gen, torch::kFloat64);
  dataset_value d;
  d.name = "regression";
  d.inputs = x.to(torch::kFloat32);
  d.targets = y.to(torch::kFloat32);
  d.classification = false;
  d.sample_shape = {f};
  return d;
}

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

port_values run_dataset(node_call& call) {
  auto name = call.string_param("name");
  dataset_value d;
  if (name == "fashion_mnist")
    d = fashion_mnist(call);
  else if (name == "moons" || name == "circles")
    d = two_class_toy(call, name == "moons");
  else if (name == "blobs")
    d = blobs(call);
  else if (name == "regression")
    d = regression(call);
  else
    d = csv(call);
  call.final_metrics = {{"samples", d.size()}};
  return {{"dataset", make_value(std::make_shared<dataset_value>(std::move(d)))}};
}

} // namespace

void bind_dataset_nodes_runs(node_runs& runs) {
  runs["Dataset"] = run_dataset;
}

} // namespace cdui::runtime::nodes
