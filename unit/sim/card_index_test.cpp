// The simulator's index of cards (sim/card_index.hpp): the first card with room, and the first
// worker with a whole device set free by count.
#include <boost/test/unit_test.hpp>

#include "sim/card_index.hpp"

using cdui::sim::card_index;

BOOST_AUTO_TEST_SUITE(card_index_test)

BOOST_AUTO_TEST_CASE(the_first_card_with_room_in_candidate_order) {
  card_index index{{0, 0, 1, 1, 2}, {0, 1, 0, 1, 0}};
  BOOST_TEST(index.busy() == 5u);
  BOOST_TEST(!index.first_with(0).has_value());
  index.set(3, 8);
  index.set(1, 4);
  index.set(4, 8);
  BOOST_TEST(index.busy() == 2u);
  BOOST_TEST(index.most() == 8);
  BOOST_TEST(*index.first_with(3) == 1u);
  BOOST_TEST(*index.first_with(5) == 3u);
  BOOST_TEST(!index.first_with(9).has_value());
  index.set(3, card_index::not_idle);
  BOOST_TEST(*index.first_with(5) == 4u);
  BOOST_TEST(index.busy() == 3u);
}

BOOST_AUTO_TEST_CASE(the_first_worker_with_a_whole_set_free_by_count) {
  card_index index{{0, 0, 1, 1}, {0, 1, 0, 1}};
  BOOST_TEST(!index.first_worker_with(0b11).has_value());
  index.set(0, card_index::by_count);
  index.set(2, card_index::by_count);
  index.set(3, card_index::by_count);
  BOOST_TEST(*index.first_worker_with(0b11) == 1u);
  BOOST_TEST(*index.first_worker_with(0b01) == 0u);
  index.set(1, card_index::by_count);
  BOOST_TEST(*index.first_worker_with(0b11) == 0u);
  index.set(1, 5);  // shared by memory: a set never takes it
  BOOST_TEST(*index.first_worker_with(0b11) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
