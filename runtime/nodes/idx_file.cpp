#include "runtime/nodes/dataset_files.hpp"

#include <cstdlib>
#include <limits>
#include <string_view>

#include <torch/torch.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

namespace cdui::runtime::nodes {

namespace {

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

} // namespace

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

} // namespace cdui::runtime::nodes
