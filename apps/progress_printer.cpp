#include "apps/progress_printer.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "messages/stop_reason.hpp"

namespace cdui::apps {

namespace {

constexpr int bar_width = 24;

std::string format_seconds(double s) {
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  return buf;
}

std::string format_value(const nlohmann::json& v) {
  if (v.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", v.get<double>());
    return buf;
  }
  return v.dump();
}

} // namespace

progress_printer::progress_printer(std::FILE* out, bool interactive)
  : out_(out), interactive_(interactive) {}

void progress_printer::close_line() {
  if (line_open_) {
    std::fputc('\n', out_);
    line_open_ = false;
  }
}

void progress_printer::print_progress(const std::string& node, int epoch, int epochs, long batch,
                                      long batches, double loss, double rate, double eta) {
  auto filled = batches > 0 ? static_cast<int>(bar_width * batch / batches) : 0;
  std::string bar(static_cast<std::size_t>(filled), '=');
  if (filled < bar_width)
    bar += '>' + std::string(static_cast<std::size_t>(bar_width - filled - 1), ' ');
  std::fprintf(out_, "%s[%s] epoch %d/%d [%s] batch %ld/%ld loss %.4f %.0f samples/s ETA %s",
               interactive_ ? "\r" : "", node.c_str(), epoch, epochs, bar.c_str(), batch, batches,
               loss, rate, format_seconds(eta).c_str());
  if (interactive_) {
    std::fputs("\033[K", out_);
    line_open_ = true;
  } else {
    std::fputc('\n', out_);
  }
  std::fflush(out_);
}

void progress_printer::print(const run_event& event) {
  auto data = nlohmann::json::parse(event.data, nullptr, false);
  if (data.is_discarded())
    return;
  const auto& type = event.type;
  auto node = data.value("node", std::string{});
  if (type == "progress") {
    auto batch = data.value("batch", 0L);
    auto batches = data.value("batches", 0L);
    // Off a terminal, only an epoch's last batch is worth a line.
    if (!interactive_ && batch != batches)
      return;
    print_progress(node, data.value("epoch", 0), data.value("epochs", 0), batch, batches,
                   data.value("loss", 0.0), data.value("samples_per_s", 0.0),
                   data.value("eta_s", 0.0));
    return;
  }
  // Epoch series only: a per-step or per-batch series (train_loss_batch) would flood the terminal.
  if (type == "metric" && data.value("step", 0) > 0 && !data.contains("axis")) {
    close_line();
    std::fprintf(out_, "[%s] epoch %d %s %s\n", node.c_str(), data.value("step", 0),
                 data.value("name", std::string{}).c_str(), format_value(data["value"]).c_str());
  } else if (type == "run_warning") {
    close_line();
    std::fprintf(out_, "warning (%s): %s\n", data.value("kind", std::string{}).c_str(),
                 data.value("message", std::string{}).c_str());
  } else if (type == "execution_start") {
    std::fprintf(out_, "started (seed %s, intra-op threads: %d)\n", data["seed"].dump().c_str(),
                 data.value("num_threads", 1));
  } else if (type == "execution_stopped") {
    close_line();
    // The word first, as a warning's kind; an older server's event has only its sentence.
    if (auto reason = stopped_reason(data))
      std::fprintf(out_, "stopped (%s): %s\n", to_string(*reason), stopped_message(data).c_str());
    else
      std::fprintf(out_, "stopped: %s\n", stopped_message(data).c_str());
  } else {
    return;
  }
  std::fflush(out_);
}

} // namespace cdui::apps
