#include "actors/common/join_address.hpp"

#include <memory>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace cdui::actors {

std::string address_toward(const std::string& endpoint) {
  const std::string scheme = "tcp://";
  auto colon = endpoint.rfind(':');
  if (endpoint.rfind(scheme, 0) != 0 || colon == std::string::npos || colon <= scheme.size())
    return "";
  auto host = endpoint.substr(scheme.size(), colon - scheme.size());
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), endpoint.substr(colon + 1).c_str(), &hints, &found) != 0)
    return "";
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list{found, ::freeaddrinfo};
  // A datagram socket's connect only picks the route and the source address; nothing is sent.
  int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return "";
  sockaddr_storage local{};
  socklen_t size = sizeof local;
  char text[NI_MAXHOST] = {};
  bool known = ::connect(fd, found->ai_addr, found->ai_addrlen) == 0
               && ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) == 0
               && ::getnameinfo(reinterpret_cast<sockaddr*>(&local), size, text, sizeof text, nullptr, 0,
                                NI_NUMERICHOST) == 0;
  ::close(fd);
  return known ? text : "";
}

} // namespace cdui::actors
