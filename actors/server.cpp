#include "actors/server.hpp"

#include <stdexcept>
#include <thread>

#include <caf/all.hpp>

#include "actors/run_queue.hpp"
#include "devices/host_inventory.hpp"
#include "messages/atoms.hpp"
#include "storage/home.hpp"

namespace cdui {

namespace {

caf::actor_system_config make_config(int threads) {
  caf::actor_system_config cfg;
  auto n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cfg.set("scheduler.max-threads", static_cast<std::size_t>(n));
  cfg.set("logger.verbosity", caf::atom("quiet"));
  return cfg;
}

} // namespace

struct server::impl {
  explicit impl(config c)
    : home(c.home.empty() ? storage::default_home() : c.home),
      cfg(make_config(c.scheduler_threads)),
      system(cfg) {
    std::filesystem::create_directories(home / "runs");
    auto inventory = c.sim_devices.empty() ? devices::host_inventory::probe()
                                           : devices::host_inventory::probe(c.sim_devices);
    queue = system.spawn(actors::run_queue, home, std::move(inventory));
  }

  /// Sends a request to the run queue and waits for its answer.
  template <class T, class... Ts>
  std::optional<T> ask(Ts&&... xs) {
    caf::scoped_actor self{system};
    std::optional<T> answer;
    self->request(queue, caf::infinite, std::forward<Ts>(xs)...)
      .receive([&](T& x) { answer = std::move(x); }, [&](caf::error&) {});
    return answer;
  }

  std::filesystem::path home;
  caf::actor_system_config cfg;
  caf::actor_system system;
  caf::actor queue;
};

server::server() : server(config{}) {}

server::server(config cfg) : impl_(std::make_unique<impl>(std::move(cfg))) {}

server::~server() {
  for (const auto& run : runs())
    if (!is_final(run.status))
      cancel(run.id);
  for (const auto& run : runs())
    wait(run.id);
  caf::anon_send_exit(impl_->queue, caf::exit_reason::user_shutdown);
}

submit_result server::submit(run_request request) {
  auto answer = impl_->ask<submit_result>(atoms::submit::value, std::move(request));
  return answer ? *answer : submit_result{"", "the run queue did not answer"};
}

std::optional<run_info> server::info(const std::string& run_id) {
  return impl_->ask<run_info>(atoms::info::value, run_id);
}

std::vector<run_info> server::runs() {
  auto answer = impl_->ask<std::vector<run_info>>(atoms::list::value);
  return answer ? *answer : std::vector<run_info>{};
}

event_batch server::events(const std::string& run_id, std::uint64_t cursor,
                           std::chrono::milliseconds wait) {
  auto ms = static_cast<std::uint32_t>(std::max<std::int64_t>(0, wait.count()));
  auto answer = impl_->ask<event_batch>(atoms::events::value, run_id, cursor, ms);
  if (!answer)
    throw std::invalid_argument("no run has the id '" + run_id + "'");
  return *answer;
}

run_info server::wait(const std::string& run_id) {
  auto answer = impl_->ask<run_info>(atoms::wait::value, run_id);
  if (!answer)
    throw std::invalid_argument("no run has the id '" + run_id + "'");
  return *answer;
}

bool server::cancel(const std::string& run_id) {
  auto answer = impl_->ask<bool>(atoms::cancel::value, run_id);
  return answer && *answer;
}

const std::filesystem::path& server::home() const {
  return impl_->home;
}

} // namespace cdui
