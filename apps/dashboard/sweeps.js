// The Sweeps views: the sweeps, newest first (GET /api/sweeps), and a sweep's page
// (GET /api/sweeps/{id}): its state and counts, Cancel, the variants ranked by the objective, and a
// chart of the objective against each swept param (Chart.js scatter).
import {perform} from './actions.js';
import {act, api} from './api.js';
import {el, replace} from './dom.js';
import {report} from './errors.js';
import * as fmt from './format.js';
import {poll, pollObject} from './poll.js';

const refresh_ms = 2000;
/// Sweeps a page of the list shows; GET /api/sweeps answers them all, the page draws 50.
const page_size = 50;
const ended = new Set(['finished', 'failed', 'cancelled']);

function sweepLink(s) {
  return el('a', {href: `#/sweeps/${encodeURIComponent(s.sweep_id)}`}, s.name || s.sweep_id);
}

function counts(c) {
  return Object.entries(c || {}).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(', ') || '—';
}

function objectiveText(o) {
  return o ? `${o.direction} ${o.metric}` : '—';
}

/// Starts the list in `view`, at the page of `params` (offset).
export function startSweeps(view, params) {
  const offset = Math.max(0, Number.parseInt(params.get('offset') || '0', 10) || 0);
  const body = el('tbody');
  const counter = el('span', {class: 'muted', id: 'sweeps-count'});
  const go = o => { location.hash = o ? `#/sweeps?offset=${o}` : '#/sweeps'; };
  const newer = el('button', {type: 'button', onclick: () => go(Math.max(0, offset - page_size))}, '‹ newer');
  const older = el('button', {type: 'button', onclick: () => go(offset + page_size)}, 'older ›');
  const empty = el('p', {class: 'muted', hidden: true}, 'No sweep yet: `cdui sweep GRAPH SPEC` or POST /api/sweeps starts one.');
  replace(view, el('div', {class: 'toolbar'}, el('h1', {}, 'Sweeps'), counter, newer, older),
          el('table', {id: 'sweeps-table'},
             el('thead', {}, el('tr', {}, ['State', 'Sweep', 'Runs', 'Objective', 'Created', 'Finished']
                                            .map(h => el('th', {}, h)))), body),
          empty);
  const live = poll(refresh_ms, async () => {
    try {
      const all = (await api('/api/sweeps')).sweeps;
      const page = all.slice(offset, offset + page_size);
      replace(body, page.map(s => el('tr', {dataset: {sweepId: s.sweep_id}},
                                     el('td', {class: `status state status-${s.state}`}, s.state),
                                     el('td', {}, sweepLink(s), el('span', {class: 'muted id'}, ` ${s.sweep_id}`)),
                                     el('td', {}, `${s.runs}: ${counts(s.counts)}`),
                                     el('td', {}, objectiveText(s.objective)),
                                     el('td', {}, new Date(s.created_ms).toLocaleString()),
                                     el('td', {}, s.finished_ms ? new Date(s.finished_ms).toLocaleString() : '—'))));
      counter.textContent = all.length ? `${offset + 1}–${offset + page.length} of ${all.length}` : '';
      newer.disabled = offset === 0;
      older.disabled = offset + page.length >= all.length;
      empty.hidden = all.length > 0;
      report('view:sweeps', null);
    } catch (e) {
      report('view:sweeps', `Sweeps: ${e.detail || e.message}`);
    }
  });
  return () => live.stop();
}

/// The swept params, in the spec's order: "node.param" and the scale of a range.
function sweptParams(sweep) {
  return ((sweep.spec && sweep.spec.params) || []).map(p => ({key: `${p.node}.${p.param}`, log: p.scale === 'log'}));
}

function scatter(canvas, param, metric) {
  const numeric = param.values.every(v => typeof v === 'number');
  return new window.Chart(canvas, {
    type: 'scatter',
    data: {datasets: [{label: `${metric} by ${param.key}`, data: [], backgroundColor: '#2563eb', pointRadius: 4}]},
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      plugins: {legend: {display: false}},
      scales: {
        x: numeric ? {type: param.log ? 'logarithmic' : 'linear', title: {display: true, text: param.key}}
                   : {type: 'category', labels: param.values.map(String), title: {display: true, text: param.key}},
        y: {title: {display: true, text: metric}},
      },
    },
  });
}

/// The page of sweep `id` in `view`.
export function startSweep(view, id) {
  const path = `/api/sweeps/${encodeURIComponent(id)}`;
  const title = el('h1', {}, id);
  const state = el('span', {class: 'status', id: 'sweep-state'});
  const cancel = el('button', {type: 'button', id: 'cancel-sweep', class: 'danger', hidden: true}, 'Cancel sweep');
  const actionNote = el('span', {class: 'muted', id: 'action-note'});
  const summary = el('dl', {class: 'summary', id: 'sweep-summary'});
  const head = el('thead');
  const body = el('tbody');
  const charts = el('div', {class: 'columns', id: 'sweep-charts'});
  const noCharts = el('p', {class: 'muted'}, 'No variant has an objective yet.');
  replace(view, el('p', {}, el('a', {href: '#/sweeps'}, '‹ Sweeps')),
          el('div', {class: 'toolbar'}, title, state, cancel, actionNote,
             el('a', {href: `${path}/results.csv`, download: `sweep-${id}.csv`}, 'results.csv')),
          el('section', {class: 'panel'}, el('h2', {}, 'Summary'), summary),
          el('section', {class: 'panel'}, el('h2', {}, 'Objective against each swept param'), noCharts, charts),
          el('section', {class: 'panel'}, el('h2', {}, 'Variants, ranked'),
             el('table', {id: 'sweep-variants'}, head, body)));
  const chartsByKey = new Map();
  let sweep = null;  // the last answer, which drawCharts() reads
  const drawCharts = () => {
    if (typeof window.Chart !== 'function') {
      noCharts.textContent = 'Charts are unavailable: Chart.js did not load.';
      return;
    }
    const metric = sweep.objective.metric;
    const scored = sweep.variants.filter(v => typeof v.objective === 'number');
    for (const p of sweptParams(sweep)) {
      const values = [...new Set(sweep.variants.map(v => v.params[p.key]))];
      if (!chartsByKey.has(p.key)) {
        const canvas = el('canvas', {dataset: {param: p.key}});
        charts.append(el('div', {class: 'chart-box'}, canvas));
        chartsByKey.set(p.key, scatter(canvas, {...p, values}, metric));
      }
      const chart = chartsByKey.get(p.key);
      const numeric = values.every(v => typeof v === 'number');
      chart.data.datasets[0].data = scored.map(v => ({x: numeric ? v.params[p.key] : String(v.params[p.key]),
                                                      y: v.objective}));
      chart.update('none');
    }
    noCharts.hidden = scored.length > 0;
    charts.hidden = scored.length === 0;
  };
  const show = s => {
    sweep = s;
    title.textContent = s.name ? `${s.name} (${s.sweep_id})` : s.sweep_id;
    state.textContent = s.state;
    state.className = `status status-${s.state}`;
    cancel.hidden = ended.has(s.state) || s.state === 'cancelling';
    const params = sweptParams(s).map(p => p.key);
    replace(summary, [['State', s.state], ['Runs', `${s.runs}: ${counts(s.counts)}`],
                      ['Objective', objectiveText(s.objective)], ['Method', s.spec.method],
                      ['Best', s.best ? `${s.best.run_id}: ${fmt.number(s.best.objective)}` : '—'],
                      ['Created', new Date(s.created_ms).toLocaleString()],
                      ['Finished', s.finished_ms ? new Date(s.finished_ms).toLocaleString() : '—']]
                       .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {dataset: {field: k.toLowerCase()}}, v)]));
    replace(head, el('tr', {}, ['Rank', '#', 'Run', 'Status', ...params, s.objective.metric, 'Where', 'Error']
                                 .map(h => el('th', {}, h))));
    replace(body, s.variants.map(v => el('tr', {dataset: {runId: v.run_id, rank: v.rank ?? ''}},
      el('td', {class: 'rank'}, v.rank ?? '—'), el('td', {}, v.index),
      el('td', {}, el('a', {href: `#/runs/${encodeURIComponent(v.run_id)}`, class: 'id'}, v.run_id)),
      el('td', {class: `status status-${v.status}`}, v.status),
      params.map(k => el('td', {class: 'param'}, fmt.number(v.params[k]))),
      el('td', {class: 'objective'}, v.objective === null || v.objective === undefined ? '—' : fmt.number(v.objective)),
      el('td', {}, v.worker_id ? `${v.worker_id}: ${v.queue_key}` : v.queue_key || '—'),
      el('td', {class: 'reason'}, v.error || ''))));
    drawCharts();
  };
  const live = pollObject(refresh_ms, path, 'view:sweep', `Sweep ${id}`, show, s => ended.has(s.state));
  cancel.addEventListener('click', async () => {
    const answer = await perform(`Cancel sweep ${id}`, cancel, () => act(`${path}/cancel`));
    if (answer) {
      actionNote.textContent = answer.cancelled ? `cancel asked (now ${answer.state})` : `not cancelled: it is ${answer.state}`;
      await live.now();
    }
  });
  return () => {
    live.stop();
    for (const chart of chartsByKey.values())
      chart.destroy();
  };
}
