#include "actors/policy/part_assignment.hpp"

#include <arpa/inet.h>

namespace cdui::policy {

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]")
    return true;
  in_addr v4{};
  return inet_pton(AF_INET, std::string{host}.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

std::string machine_of(const hello& h) {
  for (const auto& offer : h.devices)
    if (offer.kind == "cpu")
      return offer.uuid;
  return "";
}

std::optional<std::string> assignment_refusal(const worker_table& table, const assign_run& a,
                                              const std::string& worker) {
  // Admitted while the worker was there, and it went between: the run never reached it. A part of
  // a DDP run across workers waits for a worker that is away (its actor sends it when the worker
  // is back, or gives it up after the grace), unless the worker is gone for good (removed).
  bool is_part = a.ddp.first_rank > 0;
  if (!table.connected(worker) && (!is_part || table.by_name(worker) == nullptr))
    return "worker '" + worker + "' went away before the run could be sent to it";
  if (a.ddp.first_rank <= 0 || a.ddp.devices.empty() || !is_loopback_host(a.ddp.store_host))
    return std::nullopt;
  const auto& first = a.ddp.devices.front();
  auto rank0 = first.substr(0, first.find('/'));
  const auto* host = table.by_name(rank0);
  const auto* part = table.by_name(worker);
  if (host == nullptr || part == nullptr)
    return std::nullopt;
  auto rank0_machine = machine_of(host->hello);
  auto part_machine = machine_of(part->hello);
  if (rank0_machine.empty() || part_machine.empty() || rank0_machine == part_machine)
    return std::nullopt;
  return "rank 0's worker '" + rank0 + "' hosts the ranks' store at " + a.ddp.store_host
         + ", a loopback address, which worker '" + worker + "' on another machine cannot reach: start the agent of '"
         + rank0 + "' with --rendezvous-host set to an address of its machine that '" + worker + "' reaches";
}

} // namespace cdui::policy
