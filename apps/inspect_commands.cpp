#include "apps/inspect_commands.hpp"

#include <chrono>
#include <cstdio>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "apps/interrupt.hpp"
#include "apps/progress_printer.hpp"
#include "apps/run_command.hpp"
#include "apps/run_json.hpp"
#include "apps/run_report.hpp"
#include "apps/runs_table.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "storage/home.hpp"
#include "storage/run_directory.hpp"

namespace cdui::apps {

namespace {

using clock = std::chrono::steady_clock;

/// The longest one long-poll waits, so that Ctrl+C and --timeout are noticed within it.
constexpr double poll_seconds = 0.5;

int fail(const cli_error& e) {
  std::fprintf(stderr, "cdui: %s\n", e.message.c_str());
  return e.exit_code;
}

/// A run a command line named, and the reader it was found with.
struct named_run {
  std::unique_ptr<run_reader> reader;
  run_info run;
};

/// The run `word` names among this home's runs, or nullopt after saying why there is none
/// (`exit_code` then says how the command ends).
std::optional<named_run> find_named(const std::string& word, int& exit_code) {
  auto home = storage::default_home();
  auto opened = run_reader::open(home);
  if (auto* e = std::get_if<cli_error>(&opened)) {
    exit_code = fail(*e);
    return std::nullopt;
  }
  auto reader = std::move(std::get<std::unique_ptr<run_reader>>(opened));
  if (!reader) {
    exit_code = fail({"no runs on " + home.string() + " yet", exit_usage});
    return std::nullopt;
  }
  auto run = reader->find(word);
  if (auto* e = std::get_if<cli_error>(&run)) {
    exit_code = fail(*e);
    return std::nullopt;
  }
  return named_run{std::move(reader), std::get<run_info>(std::move(run))};
}

/// Hands every event of run `id` after `cursor` to `print`; with `follow`, until the run ends
/// (waiting for the next events), else until the events recorded so far are printed. Stops early
/// on Ctrl+C or when `stop()` says so. 0 when it got to the end, else the error's exit code.
template <class Print, class Stop>
int each_event(run_reader& reader, const std::string& id, bool follow, Print&& print, Stop&& stop) {
  std::uint64_t cursor = 0;
  for (;;) {
    if (interrupted() || stop())
      return exit_interrupted;
    auto batch = reader.events(id, cursor, follow ? poll_seconds : 0.0);
    if (auto* e = std::get_if<cli_error>(&batch))
      return fail(*e);
    auto& b = std::get<event_batch>(batch);
    for (const auto& e : b.events) {
      print(e);
      cursor = e.cursor;
    }
    if (b.finished || (!follow && b.events.empty()))
      return exit_ok;
  }
}

} // namespace

int runs_command(const runs_options& options) {
  std::optional<run_status> filter;
  if (!options.status.empty() && !(filter = parse_run_status(options.status))) {
    std::fprintf(stderr, "cdui: --status '%s' is not one of queued, running, succeeded, failed, "
                         "cancelled, interrupted, pruned\n", options.status.c_str());
    return exit_usage;
  }
  auto home = storage::default_home();
  auto opened = run_reader::open(home);
  if (auto* e = std::get_if<cli_error>(&opened))
    return fail(*e);
  auto& reader = std::get<std::unique_ptr<run_reader>>(opened);
  storage::run_page page;
  if (reader) {
    auto listed = reader->list(filter, options.limit, 0);
    if (auto* e = std::get_if<cli_error>(&listed))
      return fail(*e);
    page = std::get<storage::run_page>(std::move(listed));
  }
  if (options.json) {
    auto runs = nlohmann::json::array();
    for (const auto& r : page.runs)
      runs.push_back(run_json(r));
    std::printf("%s\n", json_text({{"runs", runs}, {"total", page.total}}, 2).c_str());
  } else if (!reader) {
    std::printf("no runs on %s yet\n", home.c_str());
  } else {
    std::fputs(runs_table(page.runs, page.total, options.wide, now_ms()).c_str(), stdout);
  }
  return exit_ok;
}

int show_command(const std::string& word, bool json) {
  int code = exit_ok;
  auto named = find_named(word, code);
  if (!named)
    return code;
  const auto* run = &named->run;
  if (json)
    std::printf("%s\n", json_text(run_json(*run), 2).c_str());
  else
    std::fputs(run_details(*run, (storage::default_home() / "runs" / run->id).string(), now_ms()).c_str(),
               stdout);
  return exit_ok;
}

int logs_command(const std::string& word, bool follow) {
  int code = exit_ok;
  auto named = find_named(word, code);
  if (!named)
    return code;
  if (follow)
    catch_interrupts();
  return each_event(
    *named->reader, named->run.id, follow,
    [](const run_event& e) {
      std::printf("%s\n", storage::log_line(e).c_str());
      std::fflush(stdout);
    },
    [] { return false; });
}

int follow_command(const std::string& word) {
  int code = exit_ok;
  auto named = find_named(word, code);
  if (!named)
    return code;
  const auto* run = &named->run;
  std::printf("following run %s (%s), %s on %s\n", run->id.c_str(), run->name.c_str(),
              std::string{to_string(run->status)}.c_str(), run->queue_key.c_str());
  if (run->status == run_status::queued && run->queue_position > 0)
    std::printf("queued, position %u on %s\n", run->queue_position, run->queue_key.c_str());
  std::fflush(stdout);
  return follow_run(*named->reader, run->id, std::nullopt);
}

int follow_run(run_reader& reader, const std::string& id, std::optional<double> timeout_s) {
  catch_interrupts();
  auto started = clock::now();
  auto timed_out = [&] {
    return timeout_s && std::chrono::duration<double>(clock::now() - started).count() >= *timeout_s;
  };
  progress_printer printer{stdout, ::isatty(STDOUT_FILENO) == 1};
  auto code = each_event(reader, id, true, [&](const run_event& e) { printer.print(e); }, timed_out);
  printer.close_line();
  if (code == exit_interrupted) {
    std::printf("%s: stopped following run %s; it continues %s\n",
                interrupted() ? "interrupted" : "timeout", id.c_str(),
                reader.from_server() ? ("on the server (`cdui cancel " + id + "` stops it)").c_str()
                                     : "in the process that runs it");
    std::fflush(stdout);
    return interrupted() ? exit_interrupted : exit_run_failed;
  }
  if (code != exit_ok)
    return code;
  auto end = reader.get(id);
  if (auto* e = std::get_if<cli_error>(&end))
    return fail({"run " + id + " ended, but its state could not be read: " + e->message, exit_run_failed});
  auto& final_state = std::get<run_info>(end);
  print_run_end(final_state);
  return final_state.status == run_status::succeeded ? exit_ok : exit_run_failed;
}

} // namespace cdui::apps
