// Live views poll: a refresh now, then again a while after each one ends (never two at once).
import {api} from './api.js';
import {report} from './errors.js';

/// Calls `refresh` now and `ms` after each call ends, until stop(); now() refreshes at once (after
/// an action, say) instead of at the next tick.
export function poll(ms, refresh) {
  let stopped = false;
  let timer = null;
  let running = null;
  const tick = async () => {
    clearTimeout(timer);
    if (stopped)
      return;
    running = refresh();
    try {
      await running;
    } finally {
      running = null;
      if (!stopped)
        timer = setTimeout(tick, ms);
    }
  };
  tick();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
    async now() {
      if (running)
        await running;
      await tick();
    },
  };
}

/// Polls the object at `path` every `ms` and shows each answer, until `ended(answer)`; a failed
/// read is reported under `key` as "`what`: detail" until one succeeds.
export function pollObject(ms, path, key, what, show, ended) {
  let last = null;
  return poll(ms, async () => {
    if (last && ended(last))
      return;
    try {
      last = await api(path);
      show(last);
      report(key, null);
    } catch (e) {
      report(key, `${what}: ${e.detail || e.message}`);
    }
  });
}
