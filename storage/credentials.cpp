#include "storage/credentials.hpp"
#include "storage/home.hpp"

#include <array>
#include <cstdint>
#include <fstream>
#include <stdexcept>

#include <sodium.h>

namespace cdui::storage {

namespace {

std::string hex(const unsigned char* bytes, std::size_t n) {
  std::string out(n * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), bytes, n);
  out.pop_back();
  return out;
}

void init_sodium() {
  // Idempotent and thread-safe; fails only when the system has no entropy source.
  if (sodium_init() < 0)
    throw std::runtime_error("libsodium cannot initialise (no source of randomness)");
}

const unsigned char* bytes(std::string_view text) {
  return reinterpret_cast<const unsigned char*>(text.data());
}

/// The key of the rendezvous' HMACs: SHA-256 of a label and the secret, not the secret itself, as
/// HMAC hashes a key longer than 64 bytes to SHA-256(secret), which is public (credential_hash
/// names the run's keys at the rendezvous).
std::array<unsigned char, crypto_hash_sha256_BYTES> signing_key(std::string_view secret) {
  constexpr std::string_view label = "cdui rendezvous signing key\n";
  std::array<unsigned char, crypto_hash_sha256_BYTES> key;
  crypto_hash_sha256_state hash;
  crypto_hash_sha256_init(&hash);
  crypto_hash_sha256_update(&hash, bytes(label), label.size());
  crypto_hash_sha256_update(&hash, bytes(secret), secret.size());
  crypto_hash_sha256_final(&hash, key.data());
  return key;
}

using tag = std::array<unsigned char, crypto_auth_hmacsha256_BYTES>;
static_assert(crypto_auth_hmacsha256_BYTES == crypto_verify_32_BYTES, "verified_value compares with crypto_verify_32");

/// HMAC-SHA256 of `key`'s length (8 bytes, little-endian), `key` and `value`: the length makes the
/// split between key and value unambiguous.
tag value_tag(std::string_view secret, std::string_view key, std::string_view value) {
  init_sodium();
  auto mac_key = signing_key(secret);
  unsigned char length[8];
  for (std::size_t i = 0; i < sizeof length; ++i)
    length[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(key.size()) >> (8 * i));
  crypto_auth_hmacsha256_state mac;
  crypto_auth_hmacsha256_init(&mac, mac_key.data(), mac_key.size());
  sodium_memzero(mac_key.data(), mac_key.size());
  crypto_auth_hmacsha256_update(&mac, length, sizeof length);
  crypto_auth_hmacsha256_update(&mac, bytes(key), key.size());
  crypto_auth_hmacsha256_update(&mac, bytes(value), value.size());
  tag out;
  crypto_auth_hmacsha256_final(&mac, out.data());
  return out;
}

} // namespace

std::string random_secret() {
  init_sodium();
  unsigned char bytes[32];
  randombytes_buf(bytes, sizeof bytes);
  return hex(bytes, sizeof bytes);
}

std::string new_credential() {
  return "cdui-wk-" + random_secret();
}

std::string credential_hash(std::string_view credential) {
  init_sodium();
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, bytes(credential), credential.size());
  return hex(digest, sizeof digest);
}

bool same_secret(std::string_view a, std::string_view b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string signed_value(std::string_view secret, std::string_view key, std::string_view value) {
  auto mac = value_tag(secret, key, value);
  std::string out(reinterpret_cast<const char*>(mac.data()), mac.size());
  out += value;
  return out;
}

std::optional<std::string> verified_value(std::string_view secret, std::string_view key, std::string_view stored) {
  if (stored.size() < crypto_auth_hmacsha256_BYTES)
    return std::nullopt;
  auto value = stored.substr(crypto_auth_hmacsha256_BYTES);
  auto mac = value_tag(secret, key, value);
  if (crypto_verify_32(mac.data(), bytes(stored)) != 0)
    return std::nullopt;
  return std::string{value};
}

void write_private_file(const std::filesystem::path& path, std::string_view text) {
  write_file_atomic(path, text, true);
}

std::optional<std::string> read_first_line(const std::filesystem::path& path) {
  std::ifstream in{path};
  std::string line;
  if (!in || !std::getline(in, line) || line.empty())
    return std::nullopt;
  return line;
}

} // namespace cdui::storage
