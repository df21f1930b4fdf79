#include <cstdio>
#include <cstdlib>
#include <string>

#include <boost/test/unit_test.hpp>

#include "apps/progress_printer.hpp"

namespace {

/// What the printer writes for one event of `type` with `data` (JSON text), off a terminal.
std::string printed(const std::string& type, const std::string& data) {
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = ::open_memstream(&text, &size);
  {
    cdui::apps::progress_printer printer{out, false};
    printer.print({1, 0, type, data});
  }
  std::fclose(out);
  std::string result{text, size};
  std::free(text);
  return result;
}

} // namespace

BOOST_AUTO_TEST_SUITE(progress_printer_test)

BOOST_AUTO_TEST_CASE(a_stop_prints_its_word_and_its_sentence) {
  BOOST_TEST(printed("execution_stopped", R"({"reason":"cancelled","message":"cancelled before it started"})")
             == "stopped (cancelled): cancelled before it started\n");
}

BOOST_AUTO_TEST_CASE(an_older_servers_stop_prints_its_sentence) {
  // Stored before the reason became a word: the sentence was the reason.
  BOOST_TEST(printed("execution_stopped", R"({"reason":"the server stopped"})") == "stopped: the server stopped\n");
  BOOST_TEST(printed("execution_stopped", R"({"reason":7})") == "stopped: \n");
}

BOOST_AUTO_TEST_CASE(an_epoch_series_gets_a_line_and_a_per_step_series_none) {
  BOOST_TEST(printed("metric", R"({"node":"loop","name":"train_loss","value":0.5,"step":2})")
             == "[loop] epoch 2 train_loss 0.5000\n");
  BOOST_TEST(printed("metric", R"({"node":"loop","name":"train_loss_batch","value":0.5,"step":9,"axis":"step"})")
             .empty());
  BOOST_TEST(printed("metric", R"({"node":"loop","name":"val_loss_step","value":0.5,"step":3,"axis":"batch"})")
             .empty());
}

BOOST_AUTO_TEST_SUITE_END()
