// An agent's join address (actors/common/join_address.hpp): the address this machine reaches the
// server from, where the other workers of a DDP run reach its ranks' store.
#include <boost/test/unit_test.hpp>

#include "actors/common/join_address.hpp"

using cdui::actors::address_toward;

BOOST_AUTO_TEST_SUITE(join_address_test)

BOOST_AUTO_TEST_CASE(a_server_on_loopback_is_reached_from_loopback) {
  BOOST_TEST(address_toward("tcp://127.0.0.1:5555") == "127.0.0.1");
  BOOST_TEST(address_toward("tcp://127.0.0.7:5555") == "127.0.0.1");
}

BOOST_AUTO_TEST_CASE(what_names_no_reachable_host_gives_no_address) {
  for (auto endpoint : {"", "127.0.0.1:5555", "tcp://:5555", "ipc:///tmp/x"})
    BOOST_TEST(address_toward(endpoint).empty(), endpoint);
}

BOOST_AUTO_TEST_SUITE_END()
