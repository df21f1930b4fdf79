// The Runs view: a page of runs, newest first, refreshed every 2 s; filters by status, worker and
// device (GET /api/runs does the filtering, so a page is one request whatever the store holds), and
// paging.
import {api} from './api.js';
import {el, replace} from './dom.js';
import {report} from './errors.js';
import * as fmt from './format.js';
import {offsetFrom, pageQuery, pager} from './pager.js';
import {poll} from './poll.js';

/// Runs a page shows (GET /api/runs' limit): the store may hold 10,000; the page never asks for all.
const page_size = 50;
/// How often the table is refreshed.
const refresh_ms = 2000;
const statuses = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted', 'pruned'];

/// Where a run is: a running one's latest progress event (the run object's `progress`), what a
/// succeeded one trained.
function progress(run) {
  const p = run.progress;
  if (run.status === 'running')
    return p ? fmt.place(p) : 'starting';
  if (run.status === 'succeeded')
    return epochsRun(run) ? `done, ${epochsRun(run)} epochs` : 'done';
  return '—';
}

function epochsRun(run) {
  for (const metrics of Object.values(run.final_metrics || {}))
    if (metrics && typeof metrics.total_epochs_run === 'number')
      return metrics.total_epochs_run;
  return 0;
}

function waiting(run) {
  if (run.status !== 'queued')
    return '';
  const position = run.queue_position ? `#${run.queue_position}` : '';
  return [position, run.waiting_reason].filter(Boolean).join(' · ');
}

function row(run) {
  const link = `#/runs/${encodeURIComponent(run.run_id)}`;
  return el('tr', {dataset: {runId: run.run_id}},
            el('td', {class: `status status-${run.status}`}, run.status),
            el('td', {}, el('a', {href: link}, run.name || run.run_id),
               run.name ? el('span', {class: 'muted id'}, ` ${run.run_id}`) : null),
            el('td', {}, fmt.target(run)),
            el('td', {}, fmt.devices(run)),
            el('td', {class: 'budget'}, fmt.budget(run)),
            el('td', {class: 'waiting'}, waiting(run)),
            el('td', {class: 'progress'}, progress(run)),
            el('td', {}, fmt.runDuration(run)));
}

/// The workers and devices the filters offer: this server's devices and each worker's, by name; of
/// the first 1,000 workers and enrollments (the API's largest page), for a menu cannot list more.
async function filterChoices() {
  const [workers, devices] = await Promise.all([api(`/api/workers?${pageQuery(1000, 0)}&${pageQuery(1000, 0, 'enrolled_')}`),
                                                api('/api/devices')]);
  const names = new Set([...workers.workers.map(w => w.name), ...workers.enrolled.map(e => e.name)]);
  const kinds = new Set(devices.devices.map(d => d.device));
  for (const w of workers.workers)
    for (const d of w.devices)
      kinds.add(d.name);
  return {workers: [...names].sort(), devices: [...kinds].sort()};
}

/// A filter's menu: `all` first, then `choices` ([value, label]); the current value stays listed.
function menu(id, all, current, choices, onchange) {
  const known = choices.some(([value]) => value === current);
  return el('select', {id, onchange},
            el('option', {value: ''}, all),
            (known || !current ? choices : [...choices, [current, current]])
              .map(([value, label]) => el('option', {value, selected: value === current}, label)));
}

/// Starts the view in `view` for the filters and page of `params` (status, worker, device, offset).
export function startRuns(view, params) {
  const status = statuses.includes(params.get('status')) ? params.get('status') : '';
  const worker = params.get('worker') || '';
  const device = params.get('device') || '';
  const offset = offsetFrom(params);
  const go = (changes, o) => {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries({status, worker, device, ...changes}))
      if (value)
        query.set(key, value);
    if (o)
      query.set('offset', String(o));
    location.hash = `#/runs${query.toString() ? `?${query}` : ''}`;
  };
  const filter = menu('status-filter', 'all statuses', status, statuses.map(s => [s, s]),
                      e => go({status: e.target.value}, 0));
  const workerSlot = el('span');
  const deviceSlot = el('span');
  const showChoices = choices => {
    replace(workerSlot, menu('worker-filter', 'all workers', worker,
                             [['local', 'this server'], ...choices.workers.map(n => [n, n])],
                             e => go({worker: e.target.value}, 0)));
    replace(deviceSlot, menu('device-filter', 'all devices', device, choices.devices.map(n => [n, n]),
                             e => go({device: e.target.value}, 0)));
  };
  showChoices({workers: [], devices: []});
  filterChoices().then(showChoices, e => report('view:filters', `Filters: ${e.detail || e.message}`));
  const pages = pager('runs', {offset, size: page_size, go: o => go({}, o)});
  const body = el('tbody');
  const empty = el('p', {class: 'muted', hidden: true},
                   status || worker || device ? 'No run matches these filters.' : 'No runs yet.');
  replace(view,
          el('div', {class: 'toolbar'}, el('h1', {}, 'Runs'), filter, workerSlot, deviceSlot, pages.controls),
          el('table', {class: 'runs', id: 'runs-table'},
             el('thead', {}, el('tr', {}, ['Status', 'Run', 'Target', 'Devices', 'Budget', 'Waiting',
                                          'Progress', 'Duration'].map(h => el('th', {}, h)))),
             body),
          empty);
  const refresh = async () => {
    try {
      const query = new URLSearchParams();
      for (const [key, value] of Object.entries({status, worker, device}))
        if (value)
          query.set(key, value);
      const page = await api(`/api/runs?${pageQuery(page_size, offset)}${query.toString() ? `&${query}` : ''}`);
      replace(body, page.runs.map(row));
      pages.show(page.runs.length, page.total);
      empty.hidden = page.total > 0;
      report('view:runs', null);
    } catch (e) {
      report('view:runs', `Runs: ${e.detail || e.message}`);
    }
  };
  const live = poll(refresh_ms, refresh);
  return () => live.stop();
}
