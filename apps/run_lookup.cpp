#include "apps/run_lookup.hpp"

#include "messages/text.hpp"

namespace cdui::apps {

namespace {

/// How many matches an ambiguity lists before it says "and N more".
constexpr std::size_t listed_matches = 10;

std::string describe(const run_info& r) {
  auto text = r.id + " (" + std::string{to_string(r.status)};
  if (!r.name.empty())
    text += ", " + text::quoted(r.name);
  return text + ")";
}

std::string ambiguity(std::string_view word, std::string_view what,
                      const std::vector<const run_info*>& matches) {
  auto text = text::quoted(std::string{word}) + " " + std::string{what} + " "
              + std::to_string(matches.size()) + " runs: ";
  for (std::size_t i = 0; i < matches.size() && i < listed_matches; ++i)
    text += (i > 0 ? ", " : "") + describe(*matches[i]);
  if (matches.size() > listed_matches)
    text += " and " + std::to_string(matches.size() - listed_matches) + " more";
  return text + "; name one by a longer prefix of its id";
}

} // namespace

run_lookup find_run(std::string_view word, const std::vector<run_info>& runs) {
  if (word.empty())
    return {"", "a run is named by its id, a prefix of its id or its name; got an empty word"};
  std::vector<const run_info*> by_name;
  std::vector<const run_info*> by_prefix;
  for (const auto& r : runs) {
    if (r.id == word)
      return {r.id, ""};
    if (r.name == word)
      by_name.push_back(&r);
    if (r.id.compare(0, word.size(), word) == 0)
      by_prefix.push_back(&r);
  }
  if (by_name.size() == 1)
    return {by_name.front()->id, ""};
  if (by_name.size() > 1)
    return {"", ambiguity(word, "is the name of", by_name)};
  if (by_prefix.size() == 1)
    return {by_prefix.front()->id, ""};
  if (by_prefix.size() > 1)
    return {"", ambiguity(word, "is the start of the ids of", by_prefix)};
  return {"", "no run has the id or name " + text::quoted(std::string{word})
                + " (`cdui runs` lists them)"};
}

} // namespace cdui::apps
