// A card shared by memory, drawn from its ledger (http-api.md, GET /api/devices): one bar of the
// card's total, in use by running runs, reserved for runs granted and not started, what a new
// budget may take, and the rest (held outside the ledger, by other processes).
import {el} from './dom.js';
import * as fmt from './format.js';

function segment(kind, bytes, total, label) {
  const part = el('span', {class: `ledger-part ledger-${kind}`, title: `${label}: ${fmt.bytes(bytes)}`});
  // A CSSOM width, which the page's Content-Security-Policy allows (a style attribute it would not).
  part.style.width = `${total > 0 ? Math.max(0, Math.min(100, (100 * bytes) / total)) : 0}%`;
  return part;
}

/// The bar and its figures; the figures are in data-* attributes too, for the browser test.
export function ledgerBar(memory) {
  const total = memory.total_bytes || 0;
  const inUse = memory.running_bytes || 0;
  const reserved = memory.reserved_bytes || 0;
  const mayTake = memory.may_take_bytes || 0;
  const other = Math.max(0, total - inUse - reserved - mayTake);
  const budgets = (memory.runs || []).map(r => `${r.run_id} ${fmt.bytes(r.budget_bytes)}${r.running ? '' : ' (reserved)'}`);
  return el('div', {class: 'ledger', dataset: {inUse, reserved, mayTake, total}},
            el('div', {class: 'ledger-bar'},
               segment('in-use', inUse, total, 'in use by running runs'),
               segment('reserved', reserved, total, 'reserved for runs about to start'),
               segment('may-take', mayTake, total, 'what a new budget may take'),
               segment('other', other, total, 'held outside the ledger')),
            el('div', {class: 'ledger-figures'},
               `in use ${fmt.bytes(inUse)} · reserved ${fmt.bytes(reserved)} · a new budget may take `
               + `${fmt.bytes(mayTake)} · of ${fmt.bytes(total)}`
               + (memory.reported === false ? ' (no figures reported yet)' : '')),
            budgets.length ? el('div', {class: 'ledger-runs muted'}, `budgets: ${budgets.join(', ')}`) : null);
}
