#pragma once

#include <filesystem>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cdui::runtime {

struct run_context;

/// The environment variables that name the folders a run may use beyond its own, each a list of
/// absolute folders separated by ':' (as PATH). Read at run time by the process that executes the
/// run: the server, an embedded `cdui run`, or a worker's `cdui exec`.
constexpr const char* output_roots_variable = "CODEFYUI_OUTPUT_ROOTS";
constexpr const char* data_roots_variable = "CODEFYUI_DATA_ROOTS";
/// Where Debian's dataset packages put their files (dataset-fashion-mnist): always readable.
constexpr const char* builtin_datasets_root = "/usr/share/datasets";

/// A list of folders as PATH writes it. Empty entries and relative ones are skipped: a root is
/// an absolute folder, never the working directory of whoever started the process.
[[nodiscard]] std::vector<std::filesystem::path> parse_roots(std::string_view text);

/// Whether a relative path climbs out of the folder it is relative to, by its text alone
/// ("../x", "a/../../x"; not "a/../x"). What validation can refuse before anything runs.
[[nodiscard]] bool leaves_its_folder(const std::filesystem::path& relative);

/// The folders the operator lets runs use besides their own folders.
struct file_roots {
  /// CODEFYUI_OUTPUT_ROOTS: savers may write under these.
  std::vector<std::filesystem::path> output;
  /// CODEFYUI_DATA_ROOTS: datasets may be read under these (and under builtin_datasets_root).
  std::vector<std::filesystem::path> data;

  /// The two variables of this process's environment, as they are now.
  [[nodiscard]] static file_roots from_environment();
};

/// What a file param is for: what a relative path is relative to, and where the file may lie.
enum class file_use {
  /// A saver's file. Relative: inside the run's checkpoints/ folder. Absolute: there, or under an
  /// output root.
  output,
  /// A CheckpointLoader's file. Relative: inside the run's checkpoints/ folder. Absolute: in the
  /// run's folder, in a checkpoints/ folder of a run of the home, or under a data or output root.
  checkpoint,
  /// A Dataset's file. Relative: looked up under each data root in turn, then under the built-in
  /// datasets' folder. Absolute: under one of those, or in the run's folder.
  data,
};

/// A path as a refusal shows it: quoted, its first 200 characters, bytes that are not UTF-8
/// replaced.
[[nodiscard]] std::string quoted_path(const std::filesystem::path& p);

/// The refusal that the text of a path alone gives, for validation: empty, or relative and
/// leaving its folder. Empty when there is none.
[[nodiscard]] std::string refusal_by_text(file_use use, std::string_view param,
                                          const std::string& path);

/// A path a node may use, or why not.
struct file_decision {
  /// The path as the user will recognise it (a relative path resolved, `..` folded, links kept):
  /// what messages and final metrics show.
  std::filesystem::path shown;
  /// The path with every symbolic link resolved: what was checked, and what is opened.
  std::filesystem::path real;
  /// Empty when allowed; otherwise a sentence that starts with the param's name.
  std::string refusal;

  [[nodiscard]] bool allowed() const { return refusal.empty(); }
};

/// A file opened for reading once every check passed: a regular file, and the file the
/// descriptor holds is the one the checks allowed (a link swapped in meanwhile is caught). Closed
/// when it goes out of scope.
class input_file {
public:
  input_file();
  input_file(input_file&& other) noexcept;
  input_file& operator=(input_file&& other) noexcept;
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;
  ~input_file();

  [[nodiscard]] bool is_open() const { return fd_ >= 0; }
  [[nodiscard]] const file_decision& decision() const { return decision_; }
  [[nodiscard]] const std::string& refusal() const { return decision_.refusal; }
  /// The shown path, quoted for a message (bytes that are not UTF-8 replaced).
  [[nodiscard]] std::string quoted() const;
  /// The file as a binary stream from its start; the stream owns the descriptor from then on.
  [[nodiscard]] std::istream& stream();
  /// Hands the descriptor over to a library that closes it itself (gzdopen).
  [[nodiscard]] int release();
  /// The descriptor, still this object's (-1: none).
  [[nodiscard]] int descriptor() const { return fd_; }

private:
  friend class file_access;
  struct streaming;
  file_decision decision_;
  int fd_ = -1;
  std::unique_ptr<streaming> stream_;
};

/// The rules for the files a run's nodes read and write (docs/graph-format.md, "Files a run may
/// use"). Plain std::filesystem and POSIX calls: no torch, no actors.
///
/// Never allowed: anything inside a cdui home (the run's $CODEFYUI_HOME, or any folder that holds
/// cdui.db, server.lock or session.token) except, for writing, the run's own checkpoints/ folder
/// and, for reading, the run's own folder and the checkpoints/ folders of the home's runs; an
/// input that is not a regular file (a FIFO, a device such as /dev/zero, a folder).
class file_access {
public:
  /// `home` may be empty: it is then found from `run_dir` when that is <home>/runs/<id> or
  /// <home>/agents/<name>/runs/<id>.
  file_access(std::filesystem::path run_dir, std::filesystem::path home, file_roots roots);

  /// The rules for a run: its folder and home, and the roots of this process's environment now.
  [[nodiscard]] static file_access for_run(const run_context& run);

  /// Where `path` (the value of param `param`) resolves for `use`, and whether it is allowed. An
  /// input must exist and be a regular file; an output must not be a folder.
  [[nodiscard]] file_decision decide(file_use use, std::string_view param,
                                     const std::string& path) const;

  /// decide(), then opens the file for reading without blocking (a FIFO never holds the run) and
  /// checks the open descriptor again. `use` is checkpoint or data.
  [[nodiscard]] input_file open(file_use use, std::string_view param, const std::string& path) const;

  /// decide(file_use::output, ...), then writes `bytes` to a temporary name beside the file and
  /// renames it over the file, creating missing folders; the folder written into is checked again
  /// once it is open. Refused when a check or the write fails; a failed write leaves no file.
  [[nodiscard]] file_decision write(std::string_view param, const std::string& path,
                                    std::string_view bytes) const;

private:
  [[nodiscard]] file_decision resolve(file_use use, std::string_view param,
                                      const std::string& path) const;
  [[nodiscard]] std::string check_place(file_use use, std::string_view param,
                                        const file_decision& d) const;
  [[nodiscard]] std::filesystem::path home_holding(const std::filesystem::path& real) const;

  std::filesystem::path run_dir_;
  std::filesystem::path checkpoints_;
  std::vector<std::filesystem::path> homes_;
  file_roots roots_;
};

} // namespace cdui::runtime
