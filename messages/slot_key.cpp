#include "messages/slot_key.hpp"

namespace cdui {

std::string slot_key::str() const {
  return offerer.empty() ? device : offerer + "/" + device;
}

slot_key slot_key::parse(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos)
    return {"", std::string{text}};
  return {std::string{text.substr(0, slash)}, std::string{text.substr(slash + 1)}};
}

bool slot_key::offered_by(std::string_view text, std::string_view offerer) {
  return !offerer.empty() && text.size() > offerer.size() && text.substr(0, offerer.size()) == offerer
         && text[offerer.size()] == '/';
}

} // namespace cdui
