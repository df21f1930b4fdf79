// The error banner: every failed request's `detail`, by where it failed. A refresh's error goes when
// that refresh next succeeds; an action's stays until the next action.
import {el, replace} from './dom.js';

const shown = new Map();

/// Shows `message` for `key`, or clears it with null.
export function report(key, message) {
  if (message)
    shown.set(key, message);
  else
    shown.delete(key);
  const banner = document.getElementById('errors');
  replace(banner, [...shown.values()].map(m => el('div', {class: 'error-line'}, m)));
  banner.hidden = shown.size === 0;
}

/// Clears every message whose key starts with `prefix` (a view's, when it stops).
export function clearReports(prefix) {
  for (const key of [...shown.keys()])
    if (key.startsWith(prefix))
      report(key, null);
}
