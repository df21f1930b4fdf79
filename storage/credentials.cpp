#include "storage/credentials.hpp"
#include "storage/home.hpp"

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
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(credential.data()),
                     credential.size());
  return hex(digest, sizeof digest);
}

bool same_secret(std::string_view a, std::string_view b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
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
