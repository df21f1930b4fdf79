// The Runs view: a page of runs, newest first, refreshed every 2 s; a status filter and paging.
import {api} from './api.js';
import {el, replace} from './dom.js';
import {report} from './errors.js';
import * as fmt from './format.js';
import {poll} from './poll.js';

/// Runs a page shows (GET /api/runs' limit): the store may hold 10,000; the page never asks for all.
const page_size = 50;
/// How often the table is refreshed.
const refresh_ms = 2000;
const statuses = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted'];

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

/// Starts the view in `view` for the filter and page of `params` (status, offset).
export function startRuns(view, params) {
  const status = statuses.includes(params.get('status')) ? params.get('status') : '';
  const offset = Math.max(0, Number.parseInt(params.get('offset') || '0', 10) || 0);
  const go = (s, o) => {
    const query = new URLSearchParams();
    if (s)
      query.set('status', s);
    if (o)
      query.set('offset', String(o));
    location.hash = `#/runs${query.toString() ? `?${query}` : ''}`;
  };
  const filter = el('select', {id: 'status-filter', onchange: e => go(e.target.value, 0)},
                    el('option', {value: ''}, 'all statuses'),
                    statuses.map(s => el('option', {value: s, selected: s === status}, s)));
  const counter = el('span', {class: 'muted', id: 'runs-count'});
  const newer = el('button', {type: 'button', id: 'runs-newer', onclick: () => go(status, Math.max(0, offset - page_size))},
                   '‹ newer');
  const older = el('button', {type: 'button', id: 'runs-older', onclick: () => go(status, offset + page_size)}, 'older ›');
  const body = el('tbody');
  const empty = el('p', {class: 'muted', hidden: true}, status ? `No ${status} runs.` : 'No runs yet.');
  replace(view,
          el('div', {class: 'toolbar'}, el('h1', {}, 'Runs'), filter, counter, newer, older),
          el('table', {class: 'runs', id: 'runs-table'},
             el('thead', {}, el('tr', {}, ['Status', 'Run', 'Target', 'Devices', 'Budget', 'Waiting',
                                          'Progress', 'Duration'].map(h => el('th', {}, h)))),
             body),
          empty);
  const refresh = async () => {
    try {
      const query = new URLSearchParams({limit: String(page_size), offset: String(offset)});
      if (status)
        query.set('status', status);
      const page = await api(`/api/runs?${query}`);
      replace(body, page.runs.map(row));
      const last = offset + page.runs.length;
      counter.textContent = page.total ? `${offset + 1}–${last} of ${page.total}` : '';
      newer.disabled = offset === 0;
      older.disabled = last >= page.total;
      empty.hidden = page.total > 0;
      report('view:runs', null);
    } catch (e) {
      report('view:runs', `Runs: ${e.detail || e.message}`);
    }
  };
  const live = poll(refresh_ms, refresh);
  return () => live.stop();
}
