#include "runtime/oom.hpp"

#include "devices/memory.hpp"

namespace cdui::runtime {

std::string node_oom_message(const std::string& type, const std::string& id,
                             const oom_figures& f, const std::string& original) {
  using devices::format_bytes;
  std::string text = "Node " + type + " (" + id + ") ran out of memory on " + f.device + ".\n\n";
  if (f.budget > 0) {
    auto source = f.budget_source == "measured" ? "the measured default: the peak of the last "
                                                  "succeeded run of this graph + 20%"
                  : f.budget_source == "estimate" ? "the static estimate"
                                                  : "typed: target.memory_gib";
    text += "The run is held to its memory budget of " + format_bytes(f.budget) + " per card ("
            + source + "), and it needs more: ask for a larger target.memory_gib (cdui run "
            "--memory-gib G), or make the run smaller.\n\n";
  }
  text += "What to try, cheapest first:\n"
          "  - reduce batch_size on the DataLoader node\n"
          "  - set TrainingLoop's precision to bf16 (roughly halves activation memory on Ampere "
          "and newer)\n"
          "  - raise TrainingLoop's accumulate_steps and lower batch_size by the same factor, "
          "which keeps the effective batch identical\n"
          "  - make the model smaller, or shorten the sequence / shrink the image\n\n";
  if (f.peak > 0 || f.total > 0) {
    text += std::string{f.simulated ? "Simulated memory" : "Memory"} + " on " + f.device + ": "
            + format_bytes(f.live) + " held by live tensors, " + format_bytes(f.reserved)
            + " reserved by the allocator, " + format_bytes(f.peak) + " peak this run";
    text += f.total > 0 ? ", " + format_bytes(f.total) + " on the card.\n\n" : ".\n\n";
  }
  text += "Original error: " + original;
  return text;
}

} // namespace cdui::runtime
