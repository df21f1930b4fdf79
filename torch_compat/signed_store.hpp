#pragma once
// The DDP rendezvous' store, authenticated with the run's secret (docs/ddp.md, "Across workers"):
// every value a rank writes carries an HMAC of its full key and itself, and every value read must
// carry one: a process that reaches the TCPStore without the secret may read the values, but none
// it writes is taken by a rank.

#include <optional>
#include <string>
#include <string_view>

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace cdui::torch_compat {

/// How values are signed, given by the caller (storage::signed_value and storage::verified_value:
/// torch_compat sits left of storage/ and does not use it): what the store holds for (secret, key,
/// value), and the value in what it holds, or nullopt when that is not signed so.
struct value_signing {
  std::string (*sign)(std::string_view secret, std::string_view key, std::string_view value);
  std::optional<std::string> (*verify)(std::string_view secret, std::string_view key, std::string_view stored);
};

/// `inner` with set, compareSet and get signing and verifying values under `secret` with
/// `signing`. A value a rank reads that is not signed so throws std::runtime_error naming its key.
/// Counters (add) stay as `inner` keeps them, and the extended API (append, queues, key listing)
/// is refused: c10d's Gloo then uses get and set alone.
[[nodiscard]] c10::intrusive_ptr<c10d::Store> signed_store(c10::intrusive_ptr<c10d::Store> inner, std::string secret,
                                                           value_signing signing);

} // namespace cdui::torch_compat
