#include <boost/test/unit_test.hpp>

#include "messages/slot_key.hpp"

using cdui::slot_key;

BOOST_AUTO_TEST_SUITE(slot_key_test)

BOOST_AUTO_TEST_CASE(a_key_is_written_and_read_back_the_same) {
  for (const auto& key : {slot_key{"", "cpu"}, slot_key{"", "sim:1"}, slot_key{"gpu-box", "cuda:3"}})
    BOOST_TEST((slot_key::parse(key.str()) == key), key.str());
  BOOST_TEST((slot_key{"gpu-box", "cuda:3"}.str() == "gpu-box/cuda:3"));
  BOOST_TEST((slot_key{"", "cuda:3"}.str() == "cuda:3"));
  BOOST_TEST(slot_key::parse("any").local());
  BOOST_TEST(slot_key::parse("any").device == "any");
}

BOOST_AUTO_TEST_CASE(offered_by_matches_a_whole_worker_name_only) {
  BOOST_TEST(slot_key::offered_by("gpu-box/cuda:0", "gpu-box"));
  BOOST_TEST(!slot_key::offered_by("gpu-box2/cuda:0", "gpu-box"));
  BOOST_TEST(!slot_key::offered_by("gpu-box", "gpu-box"));
  BOOST_TEST(!slot_key::offered_by("cuda:0", ""));
}

BOOST_AUTO_TEST_SUITE_END()
