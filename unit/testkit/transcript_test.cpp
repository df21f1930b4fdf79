// How docs_test compares what a command printed with what the docs show it printing.
#include <boost/test/unit_test.hpp>

#include "testkit/transcript.hpp"

using cdui::test::console_steps;
using cdui::test::line_matches;
using cdui::test::transcript_mismatch;

BOOST_AUTO_TEST_SUITE(transcript_test)

BOOST_AUTO_TEST_CASE(console_blocks_give_commands_and_their_lines_and_other_blocks_nothing) {
  auto steps = console_steps("text\n```sh\n$ not run\n```\n```console\n$ cdui validate g.json\n"
                             "g.json: valid (9 nodes, 11 edges)\n$ cdui stop\n```\n$ outside\n");
  BOOST_REQUIRE_EQUAL(steps.size(), 2u);
  BOOST_TEST(steps[0].command == "cdui validate g.json");
  BOOST_TEST(steps[0].line == 6);
  BOOST_REQUIRE_EQUAL(steps[0].shown.size(), 1u);
  BOOST_TEST(steps[1].command == "cdui stop");
  BOOST_TEST(steps[1].shown.empty());
}

BOOST_AUTO_TEST_CASE(ids_numbers_and_column_widths_may_differ_but_words_may_not) {
  BOOST_TEST(line_matches("run 58904d0d succeeded in 0.1 s", "run 0a1b2c3d succeeded in 12.5 s"));
  BOOST_TEST(line_matches("run 58904d0d succeeded in 0.1 s", "run 12345678 succeeded in 3 s"));
  // A drawn seed may have 8 digits, which also reads as a run id's 8 hex digits.
  BOOST_TEST(line_matches("started (seed 1747526095, intra-op threads: 2)", "started (seed 13780200, intra-op threads: 2)"));
  BOOST_TEST(line_matches("NAME   STATUS", "NAME     STATUS"));
  BOOST_TEST(!line_matches("run 58904d0d succeeded in 0.1 s", "run 58904d0d failed in 0.1 s"));
  BOOST_TEST(!line_matches("[loop] epoch 1 train_loss 0.3029", "[loop] epoch 1 val_loss 0.3029"));
}

BOOST_AUTO_TEST_CASE(an_ellipsis_in_a_line_takes_any_text) {
  BOOST_TEST(line_matches("following run 58904d0d (later), \u2026", "following run 0a1b2c3d (later), queued on sim:0"));
  BOOST_TEST(line_matches("lab-1  \u2026  tcp://x", "lab-1  12m 03s ago  tcp://x"));
  BOOST_TEST(!line_matches("following \u2026 (later)", "following run (sooner)"));
}

BOOST_AUTO_TEST_CASE(an_ellipsis_line_takes_any_lines_and_nothing_else_is_skipped) {
  std::vector<std::string> printed{"a 1", "b", "c", "d"};
  BOOST_TEST(!transcript_mismatch({"a 7", "\u2026", "d"}, printed));
  BOOST_TEST(!transcript_mismatch({"\u2026"}, printed));
  BOOST_TEST(!transcript_mismatch({"a 1", "b", "c", "d", "\u2026"}, printed));
  auto missing = transcript_mismatch({"a 1", "c", "d"}, printed);
  BOOST_REQUIRE(missing.has_value());
  BOOST_TEST(*missing == "no printed line matches the shown line 'c'");
  auto more = transcript_mismatch({"a 1", "b"}, printed);
  BOOST_REQUIRE(more.has_value());
  BOOST_TEST(*more == "it printed more lines than the docs show");
  BOOST_TEST(!transcript_mismatch({}, {}).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
