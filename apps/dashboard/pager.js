// A paged table's controls: where the page is ("51–100 of 10001") and the buttons to the page
// before and after it. The server pages every list that can be large (`limit` and `offset`), so a
// refresh asks for one page whatever the store holds.
import {el} from './dom.js';

/// The page's offset from the URL's `name` parameter (0 when missing or not a number).
export function offsetFrom(params, name = 'offset') {
  return Math.max(0, Number.parseInt(params.get(name) || '0', 10) || 0);
}

/// `limit` and `offset` for a page of `size` items at `offset`, as the API's query (with `prefix`).
export function pageQuery(size, offset, prefix = '') {
  return `${prefix}limit=${size}&${prefix}offset=${offset}`;
}

/// The counter `#<id>-count` and the buttons `#<id>-<back>` and `#<id>-<forward>` ("newer", "older")
/// of a page of `size` at `offset`; `go(offset)` shows another page. show(shown, total) after each
/// refresh: the items on the page, and in all.
export function pager(id, {offset, size, go, words: [back, forward] = ['newer', 'older']}) {
  const counter = el('span', {class: 'muted', id: `${id}-count`});
  const before = el('button', {type: 'button', id: `${id}-${back}`, onclick: () => go(Math.max(0, offset - size))},
                    `‹ ${back}`);
  const after = el('button', {type: 'button', id: `${id}-${forward}`, onclick: () => go(offset + size)}, `${forward} ›`);
  return {
    controls: [counter, before, after],
    show(shown, total) {
      counter.textContent = total ? `${offset + 1}–${offset + shown} of ${total}` : '';
      before.disabled = offset === 0;
      after.disabled = offset + shown >= total;
    },
  };
}
