#include "apps/run_reader.hpp"

#include <chrono>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/client_commands.hpp"
#include "apps/run_json.hpp"
#include "apps/run_lookup.hpp"
#include "messages/json_text.hpp"
#include "messages/text.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;
using clock = std::chrono::steady_clock;

/// The page size of the server's GET /api/runs, and of a search through every run.
constexpr std::size_t page_size = 1000;
/// How often the store is looked at while a reader waits for a run's next event.
constexpr auto store_poll = std::chrono::milliseconds(100);

/// Whether `id` can go into a URL path as it is: what the server hands out (8 hex digits), or at
/// least nothing that changes the path.
bool is_path_safe(const std::string& id) {
  return !id.empty() && id.size() <= 64
         && id.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
}

cli_error bad_answer(const std::string& what) {
  return {"the server's answer to " + what + " is not what this cdui expects", exit_run_failed};
}

class server_reader final : public run_reader {
public:
  explicit server_reader(server_connection server)
    : server_(std::move(server)), client_(http_client(server_)) {}

  bool from_server() const override { return true; }

  cli_result<storage::run_page> list(std::optional<run_status> status, std::size_t limit,
                                     std::size_t offset) override {
    auto path = "/api/runs?limit=" + std::to_string(limit) + "&offset=" + std::to_string(offset);
    if (status)
      path += "&status=" + std::string{to_string(*status)};
    auto body = get_json(path);
    if (auto* e = std::get_if<cli_error>(&body))
      return *e;
    auto& j = std::get<json>(body);
    if (!j.is_object() || !j["runs"].is_array() || !j["total"].is_number_unsigned())
      return bad_answer("the list of runs");
    storage::run_page page;
    for (const auto& r : j["runs"])
      page.runs.push_back(run_from_json(r));
    page.total = j["total"].get<std::uint64_t>();
    return page;
  }

  cli_result<run_info> get(const std::string& id) override {
    if (!is_path_safe(id))
      return cli_error{"no run has the id " + text::quoted(id), exit_usage};
    auto body = get_json("/api/runs/" + id);
    if (auto* e = std::get_if<cli_error>(&body))
      return *e;
    auto run = run_from_json(std::get<json>(body));
    if (run.id != id)
      return bad_answer("run " + id);
    return run;
  }

  cli_result<event_batch> events(const std::string& id, std::uint64_t cursor,
                                 double wait_s) override {
    if (!is_path_safe(id))
      return cli_error{"no run has the id " + text::quoted(id), exit_usage};
    char wait[32];
    std::snprintf(wait, sizeof wait, "%.3f", wait_s);
    auto path = "/api/runs/" + id + "/events?cursor=" + std::to_string(cursor) + "&wait=" + wait;
    auto asked = clock::now();
    auto res = client_.Get(path.c_str());
    if (res && res->status == 503) {
      // Every connection this machine may hold is taken: no events this time; ask again no
      // sooner than the wait asked for, not in a tight loop.
      std::this_thread::sleep_until(asked + std::chrono::duration<double>(wait_s));
      return event_batch{};
    }
    auto body = answer_json(res);
    if (auto* e = std::get_if<cli_error>(&body))
      return *e;
    try {
      const auto& j = std::get<json>(body);
      event_batch batch;
      for (const auto& e : j.at("events"))
        batch.events.push_back({e.at("cursor").get<std::uint64_t>(), e.at("time_ms").get<std::int64_t>(),
                                e.at("type").get<std::string>(), json_text(e.at("data"))});
      batch.finished = j.at("finished").get<bool>();
      // A busy server answers at once, with nothing: wait as long as was asked before the next.
      if (batch.events.empty() && !batch.finished)
        std::this_thread::sleep_until(asked + std::chrono::duration<double>(wait_s));
      return batch;
    } catch (const json::exception&) {
      return bad_answer("the events of run " + id);
    }
  }

private:
  cli_result<json> get_json(const std::string& path) { return answer_json(client_.Get(path.c_str())); }

  cli_result<json> answer_json(const httplib::Result& res) {
    if (!res)
      return cli_error{no_answer(server_, res), exit_run_failed};
    if (res->status != 200)
      return cli_error{detail_of(*res), res->status == 404 || res->status == 400 ? exit_usage
                                                                                 : exit_run_failed};
    auto j = json::parse(res->body, nullptr, false);
    if (j.is_discarded())
      return cli_error{"the server at " + server_.address.http_url() + " answered with no JSON",
                       exit_run_failed};
    return j;
  }

  server_connection server_;
  httplib::Client client_;
};

class store_reader final : public run_reader {
public:
  explicit store_reader(const std::filesystem::path& db)
    : store_(db, storage::run_store::check::tables) {}

  bool from_server() const override { return false; }

  cli_result<storage::run_page> list(std::optional<run_status> status, std::size_t limit,
                                     std::size_t offset) override {
    return guarded([&] { return store_.list(status, limit, offset); });
  }

  cli_result<run_info> get(const std::string& id) override {
    auto found = guarded([&] { return store_.find(id); });
    if (auto* e = std::get_if<cli_error>(&found))
      return *e;
    auto& run = std::get<std::optional<storage::stored_run>>(found);
    if (!run)
      return cli_error{"no run has the id " + text::quoted(id), exit_usage};
    return run->info;
  }

  cli_result<event_batch> events(const std::string& id, std::uint64_t cursor,
                                 double wait_s) override {
    auto until = clock::now() + std::chrono::duration<double>(wait_s);
    for (;;) {
      // The status first: a run that has ended has every event in the store already.
      auto run = get(id);
      if (auto* e = std::get_if<cli_error>(&run))
        return *e;
      bool ended = is_final(std::get<run_info>(run).status);
      auto events = guarded([&] { return store_.events_after(id, cursor, page_size); });
      if (auto* e = std::get_if<cli_error>(&events))
        return *e;
      event_batch batch{std::move(std::get<std::vector<run_event>>(events)), false};
      batch.finished = ended && batch.events.size() < page_size;
      if (!batch.events.empty() || batch.finished || clock::now() >= until)
        return batch;
      std::this_thread::sleep_for(store_poll);
    }
  }

private:
  template <class F>
  auto guarded(F&& f) -> cli_result<decltype(f())> {
    try {
      return f();
    } catch (const std::exception& e) {
      return cli_error{e.what(), exit_run_failed};
    }
  }

  storage::run_store store_;
};

} // namespace

std::unique_ptr<run_reader> run_reader::of_server(const server_connection& server) {
  return std::make_unique<server_reader>(server);
}

cli_result<std::unique_ptr<run_reader>> run_reader::open(const std::filesystem::path& home) {
  if (auto server = find_server(home))
    return std::unique_ptr<run_reader>{std::make_unique<server_reader>(*server)};
  auto db = home / "cdui.db";
  if (!std::filesystem::exists(db))
    return std::unique_ptr<run_reader>{};
  try {
    return std::unique_ptr<run_reader>{std::make_unique<store_reader>(db)};
  } catch (const std::exception& e) {
    return cli_error{e.what(), exit_run_failed};
  }
}

cli_result<run_info> run_reader::find(const std::string& word) {
  // A whole id is one request, however many runs there are.
  if (word.size() == 8 && is_path_safe(word))
    if (auto run = get(word); std::holds_alternative<run_info>(run))
      return run;
  std::vector<run_info> runs;
  for (std::size_t offset = 0;; offset += page_size) {
    auto page = list(std::nullopt, page_size, offset);
    if (auto* e = std::get_if<cli_error>(&page))
      return *e;
    auto& p = std::get<storage::run_page>(page);
    runs.insert(runs.end(), p.runs.begin(), p.runs.end());
    if (p.runs.size() < page_size || runs.size() >= p.total)
      break;
  }
  auto found = find_run(word, runs);
  if (!found.error.empty())
    return cli_error{found.error, exit_usage};
  for (auto& r : runs)
    if (r.id == found.id && is_path_safe(r.id))
      return std::move(r);
  return cli_error{"no run has the id " + text::quoted(found.id), exit_usage};
}

} // namespace cdui::apps
