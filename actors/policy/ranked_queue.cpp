#include "actors/policy/ranked_queue.hpp"

#include <functional>
#include <stdexcept>

// libstdc++'s order-statistics tree: a red-black tree whose nodes count their subtrees.
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>

namespace cdui::policy {

struct ranked_queue::tree {
  __gnu_pbds::tree<std::uint64_t, std::string, std::less<>, __gnu_pbds::rb_tree_tag,
                   __gnu_pbds::tree_order_statistics_node_update>
    runs;
};

ranked_queue::ranked_queue() : tree_{std::make_unique<tree>()} {}
ranked_queue::~ranked_queue() = default;
ranked_queue::ranked_queue(ranked_queue&&) noexcept = default;
ranked_queue& ranked_queue::operator=(ranked_queue&&) noexcept = default;

void ranked_queue::push_back(std::uint64_t seq, const std::string& run_id) {
  if (!tree_->runs.empty() && std::prev(tree_->runs.end())->first >= seq)
    throw std::logic_error("ranked_queue: a run pushed back must be newer than every run queued");
  tree_->runs.insert({seq, run_id});
}

bool ranked_queue::erase(std::uint64_t seq) {
  return tree_->runs.erase(seq);
}

const std::string& ranked_queue::front() const {
  return tree_->runs.begin()->second;
}

void ranked_queue::pop_front() {
  tree_->runs.erase(tree_->runs.begin());
}

bool ranked_queue::empty() const {
  return tree_->runs.empty();
}

std::size_t ranked_queue::size() const {
  return tree_->runs.size();
}

std::size_t ranked_queue::place(std::uint64_t seq) const {
  if (tree_->runs.find(seq) == tree_->runs.end())
    return 0;
  return tree_->runs.order_of_key(seq) + 1;
}

std::vector<std::string> ranked_queue::ids() const {
  std::vector<std::string> out;
  out.reserve(tree_->runs.size());
  for (const auto& [seq, id] : tree_->runs)
    out.push_back(id);
  return out;
}

void ranked_queue::insert(std::uint64_t seq, const std::string& run_id) {
  tree_->runs.insert({seq, run_id});
}

} // namespace cdui::policy
