#include "actors/common/curve_keys.hpp"

#include <cstdint>
#include <fstream>
#include <stdexcept>

#include <zmq.h>

#include "storage/credentials.hpp"

namespace cdui::actors {

curve_keys make_curve_keys() {
  char public_key[41];
  char secret_key[41];
  if (zmq_curve_keypair(public_key, secret_key) != 0)
    throw std::runtime_error("libzmq cannot make a CURVE key pair (built without CURVE?)");
  return {public_key, secret_key};
}

bool is_curve_key(const std::string& key) {
  std::uint8_t bytes[32];
  return key.size() == 40 && zmq_z85_decode(bytes, key.c_str()) != nullptr;
}

curve_keys load_or_create_curve_keys(const std::filesystem::path& file) {
  curve_keys keys;
  if (std::filesystem::exists(file)) {
    std::ifstream in{file};
    std::getline(in, keys.public_key);
    std::getline(in, keys.secret_key);
    if (is_curve_key(keys.public_key) && is_curve_key(keys.secret_key))
      return keys;
    throw std::runtime_error(file.string() + " does not hold a CURVE key pair (two lines of 40 Z85 "
                             "characters); delete it to make a new one (enrolled workers then need "
                             "their new command)");
  }
  keys = make_curve_keys();
  storage::write_private_file(file, keys.public_key + "\n" + keys.secret_key + "\n");
  return keys;
}

} // namespace cdui::actors
