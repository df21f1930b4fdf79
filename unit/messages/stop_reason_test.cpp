#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "messages/stop_reason.hpp"

using cdui::stop_reason;
using nlohmann::json;

BOOST_AUTO_TEST_SUITE(stop_reason_test)

BOOST_AUTO_TEST_CASE(execution_stopped_carries_a_word_and_a_sentence) {
  auto data = cdui::stopped_data(stop_reason::given_up, "worker 'w1' was not connected for 300 s");
  BOOST_TEST(data["reason"] == "given_up");
  BOOST_TEST(data["message"] == "worker 'w1' was not connected for 300 s");
  BOOST_TEST(cdui::stopped_message(data) == "worker 'w1' was not connected for 300 s");
  BOOST_TEST((cdui::stopped_reason(data) == stop_reason::given_up));
}

BOOST_AUTO_TEST_CASE(every_word_is_one_word) {
  for (auto r : {stop_reason::cancelled, stop_reason::interrupted, stop_reason::timeout,
                 stop_reason::given_up, stop_reason::not_placed, stop_reason::pruned,
                 stop_reason::worker_left}) {
    std::string word = cdui::to_string(r);
    BOOST_TEST(word.find(' ') == std::string::npos, word);
    BOOST_TEST((cdui::parse_stop_reason(word) == r));
  }
  BOOST_TEST(cdui::to_string(cdui::stop_reason_of(cdui::run_status::cancelled)) == std::string{"cancelled"});
  BOOST_TEST(cdui::to_string(cdui::stop_reason_of(cdui::run_status::interrupted)) == std::string{"interrupted"});
}

BOOST_AUTO_TEST_CASE(an_older_servers_event_gives_its_sentence_and_never_throws) {
  // Stored before the reason became a word: the sentence was the reason, and there was no message.
  BOOST_TEST(cdui::stopped_message(json{{"reason", "cancelled before it started"}}) == "cancelled before it started");
  BOOST_TEST(cdui::stopped_message(json{{"reason", 3}}).empty());
  BOOST_TEST(cdui::stopped_message(json::object()).empty());
  BOOST_TEST(cdui::stopped_message(json::parse("[1]")).empty());
  BOOST_TEST(!cdui::stopped_reason(json{{"reason", "cancelled before it started"}}).has_value());
  BOOST_TEST(!cdui::stopped_reason(json::parse("[1]")).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
