// The Workers view: this server's devices (GET /api/devices), then each worker's status and why,
// version, heartbeat age, running runs and devices
// (slots taken of the limit, memory: a shared card's ledger as a bar, else free of total; the share
// mode switch), with Drain and Undrain, Re-key and Remove (asked a second time), the enrolled
// workers and whether each has joined, and the Add worker dialog that shows the enrollment command.
// Both lists come a page at a time from the server.
import {perform as performAction} from './actions.js';
import {act, api} from './api.js';
import {commandView, confirm, closer, modal} from './dialogs.js';
import {el, replace} from './dom.js';
import {report} from './errors.js';
import * as fmt from './format.js';
import {ledgerBar} from './ledger.js';
import {offsetFrom, pageQuery, pager} from './pager.js';
import {poll} from './poll.js';

/// How often the view is refreshed. The seed's Workers panel refreshes every 5 s; 2 s shows a new
/// worker within the issue's 6 s of its agent starting even when the agent takes 3 s to start.
const refresh_ms = 2000;
/// Workers a page shows unless the URL asks for another number (per_page, 1 to 200): a server with
/// 200 workers draws 20 panels a refresh, not 200, from an answer of 20 (GET /api/workers' limit).
const page_size = 20;
const max_page_size = 200;
/// Enrolled workers a page of their list shows (enrolled_limit).
const enrolled_page_size = 20;
/// The device kinds a worker may share by memory (its CPU may not), and those this server may
/// (its CUDA cards may not): http-api.md, PUT .../sharing.
const worker_shareable = new Set(['cuda', 'mps', 'sim']);
const server_shareable = new Set(['cpu', 'sim']);

function memory(device) {
  if (device.memory)
    return ledgerBar(device.memory);
  if (!device.total_bytes)
    return '—';
  const used = 1 - device.free_bytes / device.total_bytes;
  return el('span', {class: 'memory'},
            el('meter', {min: 0, max: 1, value: used.toFixed(3),
                         title: `${Math.round(used * 100)}% in use`}),
            ` ${fmt.bytes(device.free_bytes)} free of ${fmt.bytes(device.total_bytes)}`);
}

function slots(device) {
  const s = device.slots;
  if (!s)
    return '—';
  return `${s.taken}/${s.limit}${s.waiting ? `, ${s.waiting} waiting` : ''}`;
}

/// Exclusive | Shared by memory, the current one pressed, for a device whose mode can change.
/// `owner`: the worker's name, or null for this server.
function modeSwitch(owner, device, on) {
  const mode = device.mode || 'exclusive';
  if (!(owner === null ? server_shareable : worker_shareable).has(device.kind))
    return el('span', {class: 'mode'}, mode);
  return el('span', {class: 'mode-switch', role: 'group'},
            [['exclusive', 'Exclusive'], ['shared', 'Shared by memory']].map(([value, label]) => el(
              'button', {type: 'button', dataset: {mode: value}, 'aria-pressed': String(mode === value),
                         class: mode === value ? 'pressed' : null, disabled: mode === value,
                         onclick: e => on.share(owner, device.name, value, e.target)},
              label)));
}

function devicesTable(owner, devices, on) {
  return el('table', {class: 'devices'},
            el('thead', {}, el('tr', {}, ['Device', 'Card', 'Kind', 'Slots', 'Memory', 'Mode'].map(h => el('th', {}, h)))),
            el('tbody', {}, devices.map(d => el('tr', {dataset: {device: d.name}},
                                                el('td', {}, d.name),
                                                el('td', {class: 'card-label'}, d.label || ''),
                                                el('td', {}, d.kind),
                                                el('td', {class: 'slots'}, slots(d)),
                                                el('td', {class: 'memory-cell'}, memory(d)),
                                                el('td', {}, modeSwitch(owner, d, on))))));
}

/// This server's devices, in a worker's device shape (GET /api/devices has no free figure for an
/// exclusive device).
function serverPanel(answer, on) {
  const devices = answer.devices.map(d => ({name: d.device, kind: d.device.split(':')[0], slots: d.slots,
                                            mode: d.mode, memory: d.memory}));
  return el('section', {class: 'panel', id: 'this-server'},
            el('div', {class: 'toolbar'}, el('h2', {}, 'This server')),
            devicesTable(null, devices, on));
}

function actionButton(action, label, name, on, danger = false) {
  return el('button', {type: 'button', class: danger ? 'worker-action danger' : 'worker-action',
                       dataset: {action}, onclick: e => on[action](name, e.target)}, label);
}

function workerPanel(worker, on) {
  const runs = worker.running_runs.length === 0
                 ? 'none'
                 : worker.running_runs.map(id => el('a', {href: `#/runs/${encodeURIComponent(id)}`}, id, ' '));
  return el('section', {class: 'panel worker', dataset: {worker: worker.name}},
            el('div', {class: 'toolbar'},
               el('h2', {}, worker.name),
               el('span', {class: `status status-${worker.status}`}, worker.status),
               worker.reason ? el('span', {class: 'reason'}, worker.reason) : null,
               worker.draining ? actionButton('undrain', 'Undrain', worker.name, on)
                               : actionButton('drain', 'Drain', worker.name, on),
               worker.credential === 'enrolled' ? actionButton('rekey', 'Re-key', worker.name, on) : null,
               actionButton('remove', 'Remove', worker.name, on, true)),
            el('dl', {class: 'summary'},
               el('dt', {}, 'Version'), el('dd', {}, worker.version),
               el('dt', {}, 'Heartbeat'), el('dd', {class: 'heartbeat'}, `${worker.heartbeat_age_s.toFixed(1)} s ago`),
               el('dt', {}, 'Running'), el('dd', {}, runs),
               el('dt', {}, 'Joined with'), el('dd', {}, worker.one_shot ? `${worker.credential}, one-shot` : worker.credential)),
            devicesTable(worker.name, worker.devices, on));
}

/// A page of the enrolled workers, in name order: whether each has joined, Re-key and Remove.
function enrolledRows(enrolled, on) {
  return enrolled.map(e => el('tr', {dataset: {enrolled: e.name}}, el('td', {}, e.name),
                              el('td', {class: e.connected ? 'status status-online' : 'muted'},
                                 e.connected ? 'joined' : 'not joined yet'),
                              el('td', {}, actionButton('rekey', 'Re-key', e.name, on), ' ',
                                 actionButton('remove', 'Remove', e.name, on, true))));
}

/// What removing `name` does, for the second question (http-api.md, DELETE /api/workers/{name}).
function removalConsequence(worker) {
  const runs = worker ? worker.running_runs.length : 0;
  return `Its enrollment, if it has one, is revoked: its credential no longer joins. `
         + (worker && worker.status !== 'disconnected' ? 'Its agent is disconnected and exits. ' : '')
         + `${runs === 0 ? 'No run is executing on it' : `The ${runs} run${runs === 1 ? '' : 's'} it executes end failed`}`
         + `, and the runs waiting in its queues end failed, unstarted. It leaves this list until an agent of `
         + 'that name joins again.';
}

/// The Add worker dialog: a name (and the host the other machine reaches this server by), then
/// the command POST /api/workers/enroll answers.
function addWorker(dialog, refresh) {
  const name = el('input', {id: 'enroll-name', required: true, placeholder: 'gpu-box', autocomplete: 'off'});
  const host = el('input', {id: 'enroll-host', placeholder: 'this page\'s host', autocomplete: 'off'});
  const result = el('div', {id: 'enroll-result'});
  const error = el('p', {class: 'error-line', id: 'enroll-error', hidden: true});
  const submit = el('button', {type: 'submit', id: 'enroll-submit'}, 'Enroll');
  const form = el('form', {class: 'enroll-form'},
                  el('label', {}, 'Name ', name), el('label', {}, 'Server host (optional) ', host), submit);
  form.addEventListener('submit', async e => {
    e.preventDefault();
    submit.disabled = true;
    try {
      const body = {name: name.value.trim()};
      if (host.value.trim())
        body.server_host = host.value.trim();
      const answer = await act('/api/workers/enroll', {body});
      error.hidden = true;
      form.hidden = true;
      replace(result, commandView(answer));
      report('view:action', null);
      refresh();
    } catch (err) {
      // In the dialog, which covers the banner, and in the banner for after it closes.
      error.hidden = false;
      error.textContent = err.detail || err.message;
      report('view:action', `Enroll ${name.value.trim()}: ${err.detail || err.message}`);
    } finally {
      submit.disabled = false;
    }
  });
  dialog.open(el('h2', {}, 'Add a worker'),
              el('p', {}, 'A worker on another machine joins with a credential of its own. Enrolling it here '
                          + 'makes one and gives the command that starts its agent there (`cdui workers enroll` '
                          + 'does the same; see docs/workers.md). An agent on this machine needs none: '
                          + '`cdui agent start` joins with the session token.'),
              form, error, result,
              el('div', {class: 'dialog-buttons'}, closer(dialog, 'close', 'Close', {id: 'enroll-close'})));
  name.focus();
}

/// Starts the view in `view`, at the pages of `params` (offset and per_page of the workers,
/// enrolled_offset of the enrolled ones).
export function startWorkers(view, params) {
  const perPage = Math.min(max_page_size, Math.max(1, Number.parseInt(params.get('per_page') || '', 10) || page_size));
  const offset = offsetFrom(params);
  const enrolledOffset = offsetFrom(params, 'enrolled_offset');
  const go = (o, eo) => {
    const query = new URLSearchParams();
    if (o)
      query.set('offset', String(o));
    if (perPage !== page_size)
      query.set('per_page', String(perPage));
    if (eo)
      query.set('enrolled_offset', String(eo));
    location.hash = `#/workers${query.toString() ? `?${query}` : ''}`;
  };
  const pages = pager('workers', {offset, size: perPage, go: o => go(o, enrolledOffset), words: ['previous', 'next']});
  const enrolledPages = pager('enrolled', {offset: enrolledOffset, size: enrolled_page_size, go: eo => go(offset, eo),
                                           words: ['previous', 'next']});
  const list = el('div', {id: 'workers'});
  const empty = el('p', {class: 'muted', hidden: true},
                   'No worker has joined this server since it started. `cdui agent start` on a machine '
                   + 'starts one; Add worker gives another machine its command.');
  const enrolledBody = el('tbody');
  const enrolled = el('section', {class: 'panel', id: 'enrolled', hidden: true},
                      el('div', {class: 'toolbar'}, el('h2', {}, 'Enrolled workers'), enrolledPages.controls),
                      el('table', {}, enrolledBody));
  const refused = el('div', {id: 'refused'});
  const local = el('div');
  const add = el('button', {type: 'button', id: 'add-worker'}, 'Add worker');
  replace(view, el('div', {class: 'toolbar'}, el('h1', {}, 'Workers'), add), local,
          el('div', {class: 'toolbar'}, el('h2', {}, 'Workers that joined'), pages.controls), empty, list, enrolled, refused);
  const dialog = new modal(view, 'worker-dialog');
  let live = null;
  let workers = [];
  // An action, then a refresh that shows what it changed.
  const perform = async (what, button, request) => {
    const answer = await performAction(what, button, request);
    await live.now();
    return answer;
  };
  const path = name => `/api/workers/${encodeURIComponent(name)}`;
  const on = {
    drain: (name, button) => perform(`Drain ${name}`, button, () => act(`${path(name)}/drain`)),
    undrain: (name, button) => perform(`Undrain ${name}`, button, () => act(`${path(name)}/undrain`)),
    share: (name, device, mode, button) => perform(
      `${mode === 'shared' ? 'Share' : 'Make exclusive'} ${device}${name === null ? '' : ` of ${name}`}`, button,
      () => act(`${name === null ? '/api' : path(name)}/devices/${encodeURIComponent(device)}/sharing`,
                {method: 'PUT', body: {mode}})),
    rekey: async (name, button) => {
      if (!await confirm(dialog, `Re-key worker ${name}?`,
                         'It gets a new credential, shown once; its old one no longer joins. Its current '
                         + 'connection stays, but its agent needs the new credential in its file before it '
                         + 'next says hello.', 'Re-key'))
        return;
      const answer = await perform(`Re-key ${name}`, button, () => act(`${path(name)}/rekey`, {body: {}}));
      if (answer)
        dialog.open(el('h2', {}, `Worker ${name} re-keyed`), commandView(answer),
                    el('div', {class: 'dialog-buttons'}, closer(dialog, 'close', 'Close', {id: 'enroll-close'})));
    },
    remove: async (name, button) => {
      if (await confirm(dialog, `Remove worker ${name}?`, removalConsequence(workers.find(w => w.name === name)),
                        `Remove ${name}`))
        perform(`Remove ${name}`, button, () => act(path(name), {method: 'DELETE'}));
    },
  };
  add.addEventListener('click', () => addWorker(dialog, () => live.now()));
  live = poll(refresh_ms, async () => {
    try {
      const [answer, own] = await Promise.all([
        api(`/api/workers?${pageQuery(perPage, offset)}&${pageQuery(enrolled_page_size, enrolledOffset, 'enrolled_')}`),
        api('/api/devices')]);
      replace(local, serverPanel(own, on));
      workers = answer.workers;
      replace(list, workers.map(w => workerPanel(w, on)));
      pages.show(workers.length, answer.total);
      empty.hidden = answer.total > 0;
      replace(enrolledBody, enrolledRows(answer.enrolled, on));
      enrolledPages.show(answer.enrolled.length, answer.enrolled_total);
      enrolled.hidden = answer.enrolled_total === 0;
      replace(refused, answer.refused_connections.length === 0 ? [] : el('section', {class: 'panel'},
        el('h2', {}, 'Refused connections'),
        el('ul', {}, answer.refused_connections.map(
          r => el('li', {}, `${fmt.clock(r.time_ms)} ${r.name} (${r.version}): ${r.reason}`)))));
      report('view:workers', null);
    } catch (e) {
      report('view:workers', `Workers: ${e.detail || e.message}`);
    }
  });
  return () => {
    live.stop();
    dialog.close();
  };
}
