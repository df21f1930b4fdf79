// The Sweeps views: the sweeps, newest first (GET /api/sweeps, a page at a time), and a sweep's page
// (GET /api/sweeps/{id}): its state and counts, Cancel, the variants ranked by the objective, and a
// chart of the objective against each swept param.
import {el, replace, runLink} from './dom.js';
import * as fmt from './format.js';
import {counts, objectiveText, param_charts, searchedParams, startSearchList, startSearchPage, when} from './search.js';

const sweeps = {
  noun: 'sweep', path: 'sweeps', id: 'sweep_id',
  empty: 'No sweep yet: `cdui sweep GRAPH SPEC` or POST /api/sweeps starts one.',
  columns: ['Runs', 'Objective'],
  cells: s => [`${s.runs}: ${counts(s.counts)}`, objectiveText(s.objective)],
};

/// Starts the list in `view`, at the page of `params` (offset).
export function startSweeps(view, params) {
  return startSearchList(view, params, sweeps);
}

/// The page of sweep `id` in `view`.
export function startSweep(view, id) {
  const head = el('thead');
  const body = el('tbody');
  const charts = el('div', {class: 'columns', id: 'sweep-charts'});
  const noCharts = el('p', {class: 'muted'}, 'No variant has an objective yet.');
  const byParam = new param_charts(charts, noCharts);
  const path = `/api/sweeps/${encodeURIComponent(id)}`;
  return startSearchPage(view, sweeps, id, {
    links: el('a', {href: `${path}/results.csv`, download: `sweep-${id}.csv`}, 'results.csv'),
    sections: [el('section', {class: 'panel'}, el('h2', {}, 'Objective against each swept param'), noCharts, charts),
               el('section', {class: 'panel'}, el('h2', {}, 'Variants, ranked'),
                  el('table', {id: 'sweep-variants'}, head, body))],
    summary: s => [['State', s.state], ['Runs', `${s.runs}: ${counts(s.counts)}`],
                   ['Objective', objectiveText(s.objective)], ['Method', s.spec.method],
                   ['Best', s.best ? `${s.best.run_id}: ${fmt.number(s.best.objective)}` : '—'],
                   ['Created', when(s.created_ms)], ['Finished', when(s.finished_ms)]],
    show: s => {
      const params = searchedParams(s.spec && s.spec.params);
      const keys = params.map(p => p.key);
      replace(head, el('tr', {}, ['Rank', '#', 'Run', 'Status', ...keys, s.objective.metric, 'Where', 'Error']
                                   .map(h => el('th', {}, h))));
      replace(body, s.variants.map(v => el('tr', {dataset: {runId: v.run_id, rank: v.rank ?? ''}},
        el('td', {class: 'rank'}, v.rank ?? '—'), el('td', {}, v.index), el('td', {}, runLink(v.run_id)),
        el('td', {class: `status status-${v.status}`}, v.status),
        keys.map(k => el('td', {class: 'param'}, fmt.number(v.params[k]))),
        el('td', {class: 'objective'}, typeof v.objective === 'number' ? fmt.number(v.objective) : '—'),
        el('td', {}, v.worker_id ? `${v.worker_id}: ${v.queue_key}` : v.queue_key || '—'),
        el('td', {class: 'reason'}, v.error || ''))));
      const scored = s.variants.filter(v => typeof v.objective === 'number');
      byParam.update(params, s.objective.metric, s.variants.map(v => v.params),
                     [{label: s.objective.metric, color: '#2563eb', points: scored.map(v => ({params: v.params, y: v.objective}))}]);
    },
    destroy: () => byParam.destroy(),
  });
}
