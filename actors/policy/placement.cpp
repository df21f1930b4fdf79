#include "actors/policy/placement.hpp"

#include <algorithm>

#include "actors/policy/run_options.hpp"

namespace cdui::policy {

namespace {

using devices::kind_of;

std::string joined(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names)
    list += (list.empty() ? "" : ", ") + n;
  return list;
}

std::vector<std::string> names_of(const local_devices& local) {
  std::vector<std::string> names;
  for (const auto& d : local.devices)
    names.push_back(d.name);
  return names;
}

/// A device option that fell back to the CPU here while a connected worker offers its kind: the
/// warning names the worker and how to send the run there.
std::string worker_offer_hint(const std::string& kind, const known_workers& workers) {
  for (const auto& [name, w] : workers)
    if (w.open && std::any_of(w.devices.begin(), w.devices.end(),
                              [&](const std::string& d) { return kind_of(d) == kind; }))
      return " Worker '" + name + "' offers " + kind + ": submit with --target " + name
             + " (option 'target.worker') to run there.";
  return "";
}

/// A single-device run of this server: its option, else the hint, else the CPU.
std::variant<placement, std::string> local_run(const run_request& req, const device_hint& hint,
                                               const local_devices& local,
                                               const known_workers& workers) {
  std::string text = req.device;
  std::string field = "option 'device'";
  if (text.empty()) {
    text = hint.device;
    field = hint.field;
  }
  placement p;
  if (text.empty()) {
    p.keys = {{"", "cpu"}};
    return p;
  }
  auto parsed = devices::parse_device(text);
  if (auto* err = std::get_if<devices::device_parse_error>(&parsed))
    return field + ": " + err->message;
  auto resolved = devices::resolve_device(std::get<devices::device_spec>(parsed), local.counts);
  p.keys = {{"", resolved.name}};
  // A node's device falls back with its own warning when it runs; warn here only for the option.
  if (!req.device.empty()) {
    p.fallback_warning = resolved.fallback_warning;
    p.run_device = resolved.name;
    auto kind = kind_of(resolved.name) == "cpu" ? kind_of(req.device) : std::string{};
    if (p.fallback_warning && !kind.empty() && kind != "cpu" && kind != "auto")
      *p.fallback_warning += worker_offer_hint(kind, workers);
  }
  return p;
}

/// A device set of this server: each must name a device it offers, exactly.
std::variant<placement, std::string> device_set(const std::vector<std::string>& set,
                                                const local_devices& local) {
  placement p;
  for (const auto& text : set) {
    auto parsed = devices::parse_device(text);
    std::optional<std::string> key;
    if (auto* spec = std::get_if<devices::device_spec>(&parsed); spec && !spec->malformed) {
      auto resolved = devices::resolve_device(*spec, local.counts);
      if (!resolved.fallback_warning)
        key = resolved.name;
    }
    if (!key || std::none_of(local.devices.begin(), local.devices.end(),
                             [&](const auto& d) { return d.name == *key; }))
      return "option 'target.devices': this server does not offer " + text + " (it offers "
             + joined(names_of(local)) + ")";
    p.keys.push_back({"", *key});
  }
  p.run_device = p.keys.front().device;
  return p;
}

/// The card a worker run without devices takes: the first of `offered` that `fits` and is idle
/// now (a run queued there would start at once), else the first that fits; end() when none fits.
template <class Fits>
std::vector<std::string>::const_iterator first_free(const std::vector<std::string>& offered,
                                                    const std::string& worker, Fits fits,
                                                    const admission* slots) {
  auto first = std::find_if(offered.begin(), offered.end(), fits);
  if (slots == nullptr || first == offered.end())
    return first;
  for (auto i = first; i != offered.end(); ++i)
    if (fits(*i) && slots->idle(slot_key{worker, *i}.str()))
      return i;
  return first;
}

/// A named worker's run: its devices, by the worker's own names. A worker must have connected
/// since the server started and offer every device; one that is away now is no refusal (the run
/// waits for it).
std::variant<placement, std::string> worker_run(const run_request& req, const device_hint& hint,
                                                const known_workers& workers, bool resuming,
                                                const admission* slots) {
  auto w = workers.find(req.worker);
  std::vector<std::string> wanted = req.devices;
  if (w == workers.end() && !(resuming && !wanted.empty())) {
    std::vector<std::string> known;
    for (const auto& [name, _] : workers)
      known.push_back(name);
    return "option 'target.worker': no worker named '" + req.worker
           + "' has connected to this server since it started"
           + (known.empty() ? std::string{" (none has)"} : " (known: " + joined(known) + ")");
  }
  if (w != workers.end() && req.record_outputs && w->second.one_shot)
    return "option 'record_outputs': worker '" + req.worker + "' is a one-shot worker, which exits "
           "when its run ends, taking the outputs with it";
  placement p;
  if (w == workers.end()) {
    // Checked when it was submitted; the worker has not come back yet.
    for (const auto& d : wanted)
      p.keys.push_back({req.worker, d});
    return p;
  }
  const auto& offered = w->second.devices;
  std::string field = "option 'target.devices'";
  if (wanted.empty() && !req.device.empty()) {
    wanted = {req.device};
    field = "option 'device'";
  }
  if (wanted.empty()) {
    // A node's device param names a card inside the run (renumbered from 0), not the worker's:
    // it says which kind the run needs, and the run gets the worker's first free card of that
    // kind (else its first: it waits there). Without one, a worker run starts on the worker's
    // first (free) accelerator.
    std::string kind;
    if (!hint.device.empty()) {
      kind = hint.device == "auto" ? "" : kind_of(hint.device);
      field = hint.field;
    }
    auto first = first_free(
      offered, req.worker,
      [&](const std::string& d) { return kind.empty() ? d != "cpu" : kind_of(d) == kind; }, slots);
    if (first == offered.end() && kind.empty())
      first = std::find(offered.begin(), offered.end(), "cpu");
    if (first == offered.end())
      return field + ": worker '" + req.worker + "' offers no " + kind + " device (it offers "
             + joined(offered) + ")";
    wanted = {*first};
  }
  for (const auto& d : wanted) {
    if (std::find(offered.begin(), offered.end(), d) == offered.end())
      return field + ": worker '" + req.worker + "' does not offer " + d + " (it offers "
             + joined(offered) + ")";
    p.keys.push_back({req.worker, d});
  }
  return p;
}

/// A device set across workers (docs/ddp.md, "Across workers"): each card written WORKER/DEVICE,
/// of a worker that has connected since the server started (unless `resuming`) and offers it.
/// The keys go worker by worker, in the order the workers first appear: a worker's ranks are
/// consecutive.
std::variant<placement, std::string> spread_set(const run_request& req, const known_workers& workers, bool resuming) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<slot_key>> by_worker;
  for (const auto& text : req.devices) {
    auto key = slot_key::parse(text);
    if (key.local() || key.device.empty())
      return "option 'target.devices': " + text + " names no worker; a device set across workers names each "
             "card with its worker, as WORKER/DEVICE (w1/cuda:0)";
    auto w = workers.find(key.offerer);
    if (w == workers.end() && !resuming)
      return "option 'target.devices': no worker named '" + key.offerer
             + "' has connected to this server since it started";
    if (w != workers.end()) {
      const auto& offered = w->second.devices;
      if (std::find(offered.begin(), offered.end(), key.device) == offered.end())
        return "option 'target.devices': worker '" + key.offerer + "' does not offer " + key.device
               + " (it offers " + joined(offered) + ")";
      if (req.record_outputs && w->second.one_shot)
        return "option 'record_outputs': worker '" + key.offerer + "' is a one-shot worker, which exits "
               "when its run ends, taking the outputs with it";
    }
    if (!by_worker.count(key.offerer))
      order.push_back(key.offerer);
    by_worker[key.offerer].push_back(key);
  }
  placement p;
  for (const auto& worker : order)
    p.keys.insert(p.keys.end(), by_worker[worker].begin(), by_worker[worker].end());
  return p;
}

/// Whether this server may take a floating device set: only its one first card of the kind
/// (only a worker renumbers a set from :0 for the run).
bool local_takes_set(const std::vector<std::string>& set, const local_devices& local) {
  if (set.size() != 1 || set.front() != kind_of(set.front()) + ":0")
    return false;
  return std::any_of(local.devices.begin(), local.devices.end(),
                     [&](const auto& d) { return d.name == set.front(); });
}

bool offers_all(const std::vector<std::string>& offered, const std::vector<std::string>& set) {
  return std::all_of(set.begin(), set.end(), [&](const std::string& d) {
    return std::find(offered.begin(), offered.end(), d) != offered.end();
  });
}

/// A run for any worker with a device set: it floats until one worker has the whole set free;
/// refused when no worker this server has seen offers the whole set (docs/workers.md,
/// "Run a run on whichever worker has room: target any").
std::variant<placement, std::string> floating_set(const run_request& req, const local_devices& local,
                                                  const known_workers& workers, bool resuming) {
  floating_run f;
  f.keeps_outputs = req.record_outputs;
  f.devices = req.devices;
  f.kind = kind_of(req.devices.front());
  for (const auto& d : req.devices)
    if (kind_of(d) != f.kind)
      return "option 'target.devices': a device set is of one kind; " + d + " is not " + f.kind;
  placement p;
  p.floating = f;
  if (resuming)
    return p;
  for (const auto& [name, w] : workers)
    if (offers_all(w.devices, req.devices))
      return p;
  if (local_takes_set(req.devices, local))
    return p;
  return "option 'target.devices': no worker that has connected to this server since it started "
         "offers the whole set " + joined(req.devices) + " (a run for any worker with a device set "
         "runs on a worker, which renumbers the set from " + f.kind + ":0; this server takes only a "
         "set of its " + f.kind + ":0)";
}

/// A run for any worker or the pool: the kind it asks for (its option's, else the hint's, else
/// none: the first accelerator free); refused when nothing this server knows offers it (never when
/// `resuming`: no worker has reconnected yet, and it waits for them as it did before).
std::variant<placement, std::string> floating(const run_request& req, const device_hint& hint,
                                              const local_devices& local,
                                              const known_workers& workers, bool resuming) {
  floating_run f;
  f.pool = req.worker == one_shot_pool;
  f.keeps_outputs = req.record_outputs;
  std::string device = req.device.empty() ? hint.device : req.device;
  f.kind = device.empty() || device == "auto" ? "" : kind_of(device);
  if (!req.devices.empty())
    return floating_set(req, local, workers, resuming);
  placement p;
  p.floating = f;
  auto offers = [&](const std::vector<std::string>& devices) {
    return std::any_of(devices.begin(), devices.end(), [&](const std::string& d) { return f.fits(d); });
  };
  if (resuming)
    return p;
  for (const auto& [name, w] : workers)
    if ((!f.pool || w.one_shot) && offers(w.devices))
      return p;
  if (!f.pool && offers(names_of(local)))
    return p;
  std::string what = f.kind.empty() ? "an accelerator" : "a " + f.kind + " device";
  return f.pool ? "option 'target.pool': no one-shot worker offering " + what
                    + " has connected to this server since it started"
                : "option 'target.worker' \"any\": neither this server nor a worker that has "
                  "connected since it started offers " + what
                    + (f.kind.empty() ? " (give option 'device' \"cpu\" for a CPU slot)" : "");
}

} // namespace

bool floating_run::fits(const std::string& device) const {
  return kind.empty() ? kind_of(device) != "cpu" : kind_of(device) == kind;
}

std::string placement::queue_key() const {
  if (floating)
    return floating->pool ? "one-shot" : "any";
  return keys.front().str();
}

std::variant<placement, std::string> place(const run_request& req, const device_hint& hint,
                                           const local_devices& local, const known_workers& workers,
                                           bool resuming, const admission* slots) {
  if (is_placed_later(req.worker))
    return floating(req, hint, local, workers, resuming);
  if (!req.worker.empty())
    return worker_run(req, hint, workers, resuming, slots);
  bool spread = std::any_of(req.devices.begin(), req.devices.end(),
                            [](const std::string& d) { return d.find('/') != std::string::npos; });
  if (spread)
    return spread_set(req, workers, resuming);
  if (!req.devices.empty())
    return device_set(req.devices, local);
  return local_run(req, hint, local, workers);
}

std::vector<slot_key> candidate_slots(const floating_run& run, const known_workers& workers,
                                     const local_devices& local, bool open_only) {
  std::vector<slot_key> out;
  for (const auto& [name, w] : workers) {
    if ((open_only && !w.open) || (run.pool && !w.one_shot) || (run.keeps_outputs && w.one_shot))
      continue;
    for (const auto& d : w.devices)
      if (run.fits(d))
        out.push_back({name, d});
  }
  if (!run.pool)
    for (const auto& d : local.devices)
      if (run.fits(d.name))
        out.push_back({"", d.name});
  return out;
}

floating_slots free_slots(const floating_run& run, bool has_budget, const known_workers& workers,
                          const local_devices& local, const admission& slots) {
  floating_slots out;
  if (!run.devices.empty()) {
    // A set: the first worker, in name order, with every card of it idle by count; this server
    // last, for a set of its first card.
    auto whole = [&](const std::string& offerer) {
      std::vector<slot_key> keys;
      for (const auto& d : run.devices) {
        slot_key key{offerer, d};
        if (slots.gated(key.str()) || !slots.idle(key.str())) {
          out.busy_others = true;
          return std::vector<slot_key>{};
        }
        keys.push_back(key);
      }
      return keys;
    };
    for (const auto& [name, w] : workers)
      if (w.open && !(run.keeps_outputs && w.one_shot) && offers_all(w.devices, run.devices))
        if (auto keys = whole(name); !keys.empty()) {
          out.set = std::move(keys);
          return out;
        }
    if (local_takes_set(run.devices, local))
      out.set = whole("");
    return out;
  }
  for (const auto& key : candidate_slots(run, workers, local)) {
    auto k = key.str();
    bool by_memory = slots.gated(k);
    if (by_memory && !has_budget)
      continue;
    if (!slots.idle(k))
      out.busy_others = true;
    else if (by_memory)
      out.by_memory.push_back(std::move(k));
    else if (!out.by_count)
      out.by_count = key;
  }
  return out;
}

} // namespace cdui::policy
