#include "torch_compat/signed_store.hpp"

#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <torch/version.h>

namespace cdui::torch_compat {

namespace {

using bytes = std::vector<std::uint8_t>;

std::string_view text(const bytes& value) {
  return {reinterpret_cast<const char*>(value.data()), value.size()};
}

/// A store over `inner_` whose values are signed (value_signing).
class signing_store final : public c10d::Store {
public:
  signing_store(c10::intrusive_ptr<c10d::Store> inner, std::string secret, value_signing signing)
      : Store(inner->getTimeout()), inner_(std::move(inner)), secret_(std::move(secret)), signing_(signing) {}

  using Store::compareSet;
  using Store::set;

  void set(const std::string& key, const bytes& value) override {
    inner_->set(key, sign(key, value));
  }

  bytes get(const std::string& key) override {
    return verify(key, inner_->get(key));
  }

  /// An empty `expected` stays empty: c10d's "set it if the key is missing". An empty answer carries
  /// no value to verify.
  bytes compareSet(const std::string& key, const bytes& expected, const bytes& desired) override {
    auto found = inner_->compareSet(key, expected.empty() ? expected : sign(key, expected), sign(key, desired));
    return found.empty() ? found : verify(key, found);
  }

  // Counters stay unsigned (c10d's TCPStore adds to them itself). Only our count-in barrier reads
  // them (runtime/nodes/ddp.cpp, await_ranks): a process without the secret that raises one lets the
  // ranks go on early to wait in get for values it cannot forge.
  int64_t add(const std::string& key, int64_t value) override { return inner_->add(key, value); }

  bool deleteKey(const std::string& key) override { return inner_->deleteKey(key); }
  bool check(const std::vector<std::string>& keys) override { return inner_->check(keys); }
  int64_t getNumKeys() override { return inner_->getNumKeys(); }
  void wait(const std::vector<std::string>& keys) override { inner_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    inner_->wait(keys, timeout);
  }

  void setTimeout(const std::chrono::milliseconds& timeout) override {
    Store::setTimeout(timeout);
    inner_->setTimeout(timeout);
  }

  // watchKey is left to Store's, which refuses in both versions: forwarding it would hand the
  // callback values unverified.

#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<Store> clone() override {
    return c10::make_intrusive<signing_store>(inner_->clone(), secret_, signing_);
  }

  /// False, so that c10d's Gloo reads and writes through get and set.
  bool hasExtendedApi() const override { return false; }

  // What Store does already, spelled out so that no later torch's default bypasses get and set.
  std::vector<bytes> multiGet(const std::vector<std::string>& keys) override {
    std::vector<bytes> values;
    for (const auto& key : keys)
      values.push_back(get(key));
    return values;
  }
  void multiSet(const std::vector<std::string>& keys, const std::vector<bytes>& values) override {
    TORCH_CHECK(keys.size() == values.size(), "multiSet: ", keys.size(), " keys but ", values.size(), " values");
    for (std::size_t i = 0; i < keys.size(); ++i)
      set(keys[i], values[i]);
  }

  // TCPStore's append would join two signed values into no signed value, and Store's fallback
  // through compareSet never ends on a key that holds a signed empty value; nothing in cdui
  // appends. The queues and listKeys are left to Store's, which refuse.
  void append(const std::string& /*key*/, const bytes& /*value*/) override {
    C10_THROW_ERROR(NotImplementedError, "the rendezvous store signs whole values and cannot append");
  }
#endif

private:
  bytes sign(const std::string& key, const bytes& value) const {
    auto stored = signing_.sign(secret_, key, text(value));
    return {stored.begin(), stored.end()};
  }

  bytes verify(const std::string& key, const bytes& stored) const {
    auto value = signing_.verify(secret_, key, text(stored));
    if (!value)
      throw std::runtime_error("the rendezvous store holds a value for '" + key
                               + "' not signed with the run's secret: a process without it wrote there");
    return {value->begin(), value->end()};
  }

  c10::intrusive_ptr<c10d::Store> inner_;
  std::string secret_;
  value_signing signing_;
};

} // namespace

c10::intrusive_ptr<c10d::Store> signed_store(c10::intrusive_ptr<c10d::Store> inner, std::string secret,
                                             value_signing signing) {
  return c10::make_intrusive<signing_store>(std::move(inner), std::move(secret), signing);
}

} // namespace cdui::torch_compat
