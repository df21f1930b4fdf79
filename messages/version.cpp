#include "messages/version.hpp"

namespace cdui {

const char* version() {
  return CDUI_VERSION;
}

} // namespace cdui
