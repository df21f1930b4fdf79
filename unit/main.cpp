#define BOOST_TEST_MODULE cdui unit tests
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
