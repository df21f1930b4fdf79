// Text from outside: UTF-8 checks at the edge, replacement where a string is only data, quoting
// for messages and logs, and JSON that serialises whatever bytes it holds.
#include <boost/test/unit_test.hpp>

#include "messages/json_text.hpp"
#include "messages/text.hpp"

using namespace cdui;

BOOST_AUTO_TEST_SUITE(text_test)

BOOST_AUTO_TEST_CASE(well_formed_utf8_is_told_from_every_kind_of_bad_sequence) {
  BOOST_TEST(text::is_utf8(""));
  BOOST_TEST(text::is_utf8("plain ascii"));
  BOOST_TEST(text::is_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  BOOST_TEST(!text::is_utf8("\xff"));                // never a UTF-8 byte
  BOOST_TEST(!text::is_utf8("\x80"));                // a continuation byte alone
  BOOST_TEST(!text::is_utf8("\xc3"));                // cut short
  BOOST_TEST(!text::is_utf8("\xc0\xaf"));            // overlong '/'
  BOOST_TEST(!text::is_utf8("\xe0\x80\xaf"));        // overlong, three bytes
  BOOST_TEST(!text::is_utf8("\xed\xa0\x80"));        // a UTF-16 surrogate
  BOOST_TEST(!text::is_utf8("\xf4\x90\x80\x80"));    // past U+10FFFF
}

BOOST_AUTO_TEST_CASE(bad_bytes_become_replacement_characters_and_good_ones_stay) {
  BOOST_TEST(text::to_utf8("caf\xc3\xa9") == "caf\xc3\xa9");
  BOOST_TEST(text::to_utf8("a\xff" "b") == "a\xef\xbf\xbd" "b");
  BOOST_TEST(text::to_utf8("\xc3") == "\xef\xbf\xbd");
  BOOST_TEST(text::is_utf8(text::to_utf8("\xed\xa0\x80\xf4\x90\x80\x80\x80")));
}

BOOST_AUTO_TEST_CASE(characters_are_counted_not_bytes) {
  BOOST_TEST(text::characters("abc") == 3u);
  BOOST_TEST(text::characters("\xc3\xa9\xc3\xa9") == 2u);
  BOOST_TEST(text::characters("\xf0\x9f\x98\x80") == 1u);
}

BOOST_AUTO_TEST_CASE(quoting_makes_any_bytes_safe_for_a_message_or_a_log_line) {
  BOOST_TEST(text::quoted("gpu-box") == "'gpu-box'");
  BOOST_TEST(text::quoted("a\nb\x7f") == "'a\\x0ab\\x7f'");
  BOOST_TEST(text::quoted("\xff") == "'\xef\xbf\xbd'");
  BOOST_TEST(text::quoted("abcdef", 3) == "'abc...'");
  BOOST_TEST(text::quoted("\xc3\xa9\xc3\xa9\xc3\xa9", 2) == "'\xc3\xa9\xc3\xa9...'");
}

BOOST_AUTO_TEST_CASE(json_with_bad_bytes_serialises_instead_of_throwing) {
  nlohmann::json j{{"detail", "no run has the id '\xff'"}};
  BOOST_CHECK_THROW((void)j.dump(), nlohmann::json::type_error);  // what used to abort the server
  auto text = json_text(j);
  BOOST_TEST(text == "{\"detail\":\"no run has the id '\xef\xbf\xbd'\"}");
  BOOST_TEST(nlohmann::json::parse(text)["detail"].is_string());
  BOOST_TEST(json_text({{"a", 1}}, 2) == "{\n  \"a\": 1\n}");
}

BOOST_AUTO_TEST_CASE(json_from_outside_parses_up_to_the_nesting_limit_and_says_why_not_beyond) {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  auto at_limit = parse_json_text(nested(max_json_depth));
  BOOST_TEST(at_limit.ok(), at_limit.error);
  BOOST_TEST(at_limit.value.is_array());
  auto objects = std::string{};
  for (int i = 0; i < max_json_depth; ++i)
    objects += "{\"a\":";
  objects += "1" + std::string(max_json_depth, '}');
  BOOST_TEST(parse_json_text(objects).ok());
  // One level more, or 100,000 (which overflowed the stack), is refused while parsing.
  for (const auto& text : {nested(max_json_depth + 1), "{\"a\":" + objects + "}", nested(100'000)}) {
    auto past = parse_json_text(text);
    BOOST_TEST(!past.ok());
    BOOST_TEST(past.value.is_discarded());
    BOOST_TEST(past.error == "it nests objects and arrays deeper than 256 levels");
  }
  auto broken = parse_json_text("{\"a\": tru}");
  BOOST_TEST(broken.value.is_discarded());
  BOOST_TEST(broken.error.rfind("parse error at line 1, column 10: syntax error", 0) == 0u, broken.error);
  BOOST_TEST(parse_json_text("{\"a\": [1, \"\\u00e9\"]}").value == (nlohmann::json{{"a", {1, "\u00e9"}}}));
}

BOOST_AUTO_TEST_CASE(trimmed_drops_spaces_and_tabs_at_the_ends_only) {
  BOOST_TEST(cdui::text::trimmed(" \t a b \t") == "a b");
  BOOST_TEST(cdui::text::trimmed("x") == "x");
  BOOST_TEST(cdui::text::trimmed(" \t ").empty());
  BOOST_TEST(cdui::text::trimmed("").empty());
}

BOOST_AUTO_TEST_SUITE_END()
