#include <boost/test/unit_test.hpp>

#include "apps/list_page.hpp"

using namespace cdui::apps;

BOOST_AUTO_TEST_SUITE(list_page_test)

BOOST_AUTO_TEST_CASE(a_page_holds_limit_items_from_offset_and_no_more_than_the_list_has) {
  std::vector<int> all{0, 1, 2, 3, 4};
  BOOST_TEST((list_page{2, 0}.of(all) == std::vector<int>{0, 1}));
  BOOST_TEST((list_page{2, 4}.of(all) == std::vector<int>{4}));
  BOOST_TEST((list_page{2, 5}.of(all).empty()));
  BOOST_TEST((list_page{2, 1'000'000}.of(all).empty()));
  BOOST_TEST((list_page{1000, 3}.of(all) == std::vector<int>{3, 4}));
  BOOST_TEST((list_page{1000, 0}.of(std::vector<int>{}).empty()));
}

BOOST_AUTO_TEST_CASE(a_paged_answer_says_its_total_limit_and_offset_under_a_prefix) {
  BOOST_TEST(page_fields({20, 40}, 200).dump() == R"({"limit":20,"offset":40,"total":200})");
  BOOST_TEST(page_fields({20, 0}, 3, "enrolled_").dump()
             == R"({"enrolled_limit":20,"enrolled_offset":0,"enrolled_total":3})");
}

BOOST_AUTO_TEST_SUITE_END()
