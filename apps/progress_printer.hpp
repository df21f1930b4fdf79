#pragma once

#include <cstdio>
#include <string>

#include "messages/run_event.hpp"

namespace cdui::apps {

/// Turns a run's events into what a person watches in a terminal: a progress bar per epoch (redrawn
/// in place on a terminal, one line per epoch otherwise), the epoch metrics, warnings and errors.
class progress_printer {
public:
  progress_printer(std::FILE* out, bool interactive);

  void print(const run_event& event);

  /// Ends a progress line left open by the last redraw.
  void close_line();

private:
  void print_progress(const std::string& node, int epoch, int epochs, long batch, long batches,
                      double loss, double rate, double eta);

  std::FILE* out_;
  bool interactive_;
  bool line_open_ = false;
};

} // namespace cdui::apps
