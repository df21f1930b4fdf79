// The Studies views: the studies, newest first (GET /api/studies, a page at a time), and a study's
// page (GET /api/studies/{id}): its state, sampler, pruner and best, Cancel, its trials ranked by
// their value with which were pruned and why, each trial's objective by epoch (its intermediate
// values) in one chart, and the objective against each param it searches.
import {lineChart, palette} from './curves.js';
import {el, replace, runLink} from './dom.js';
import * as fmt from './format.js';
import {counts, objectiveText, param_charts, searchedParams, startSearchList, startSearchPage, when} from './search.js';

const studies = {
  noun: 'study', path: 'studies', id: 'study_id',
  empty: 'No study yet: `cdui study GRAPH SPEC` or POST /api/studies starts one.',
  columns: ['Trials', 'Objective', 'Best'],
  cells: s => [trialsText(s), objectiveText(s.objective), s.best ? `${fmt.number(s.best.value)} (trial ${s.best.number})` : '—'],
};

function trialsText(s) {
  return `${s.trials_started} of ${s.budget.trials}: ${counts(s.counts)}`;
}

/// A sampler's or pruner's name and its settings: "asha (reduction_factor 3, min_resource 1)".
function settingsText(o) {
  if (!o || typeof o !== 'object')
    return o ? String(o) : '—';
  const settings = Object.entries(o).filter(([k]) => k !== 'name').map(([k, v]) => `${k} ${fmt.number(v)}`);
  return settings.length ? `${o.name} (${settings.join(', ')})` : o.name;
}

/// A trial's values by epoch, in epoch order, as chart points.
function curve(trial) {
  return Object.entries(trial.intermediate_values || {}).map(([epoch, y]) => ({x: Number(epoch), y}))
    .sort((a, b) => a.x - b.x);
}

/// The trials with a value (complete) best first, ranked 1, 2, ...; then the others by number.
function ranked(trials, direction) {
  const better = direction === 'max' ? (a, b) => b.value - a.value : (a, b) => a.value - b.value;
  const scored = trials.filter(t => typeof t.value === 'number').sort((a, b) => better(a, b) || a.number - b.number);
  const rest = trials.filter(t => typeof t.value !== 'number').sort((a, b) => a.number - b.number);
  return [...scored.map((t, i) => ({...t, rank: i + 1})), ...rest];
}

/// Starts the list in `view`, at the page of `params` (offset).
export function startStudies(view, params) {
  return startSearchList(view, params, studies);
}

/// The page of study `id` in `view`.
export function startStudy(view, id) {
  const head = el('thead');
  const body = el('tbody');
  const curveCanvas = el('canvas', {id: 'study-curves'});
  const charts = el('div', {class: 'columns', id: 'study-charts'});
  const noCharts = el('p', {class: 'muted'}, 'No trial has a value yet.');
  const byParam = new param_charts(charts, noCharts);
  let curves = null;
  const drawCurves = s => {
    if (typeof window.Chart !== 'function')
      return;
    curves = curves || lineChart(curveCanvas, s.objective.metric);
    curves.data.datasets = s.trials.map(t => {
      const color = t.status === 'pruned' ? '#9ca3af' : palette[t.number % palette.length];
      return {label: `trial ${t.number}${t.status === 'pruned' ? ' (pruned)' : ''}`, data: curve(t),
              borderColor: color, backgroundColor: color, pointRadius: 3,
              borderDash: t.status === 'pruned' ? [4, 3] : []};
    });
    curves.update('none');
  };
  return startSearchPage(view, studies, id, {
    sections: [el('section', {class: 'panel'}, el('h2', {}, 'Each trial\'s objective by epoch'),
                  el('p', {class: 'muted'}, 'A pruned trial\'s curve is grey and dashed. It ends at the last epoch the trial '
                                               + 'reported: its reason names the epoch it was pruned at, and a fast '
                                               + 'trial may report a few more before its stop arrives.'),
                  el('div', {class: 'chart-box'}, curveCanvas)),
               el('section', {class: 'panel'}, el('h2', {}, 'Objective against each param'), noCharts, charts),
               el('section', {class: 'panel'}, el('h2', {}, 'Trials, ranked'),
                  el('table', {id: 'study-trials'}, head, body))],
    summary: s => [['State', s.state], ['Trials', trialsText(s)], ['Objective', objectiveText(s.objective)],
                   ['Sampler', settingsText(s.sampler)], ['Pruner', settingsText(s.pruner)],
                   ['Best', s.best ? `trial ${s.best.number}, run ${s.best.run_id}: ${fmt.number(s.best.value)}` : '—'],
                   ['Epochs', `${s.epochs} trained in all`], ['Seed', s.seed ?? '—'],
                   ['Created', when(s.created_ms)], ['Finished', when(s.finished_ms)]],
    show: s => {
      const params = searchedParams(s.space);
      const keys = params.map(p => p.key);
      replace(head, el('tr', {}, ['Rank', 'Trial', 'Run', 'Status', ...keys, s.objective.metric, 'Epochs', 'Why it ended']
                                   .map(h => el('th', {}, h))));
      replace(body, ranked(s.trials, s.objective.direction).map(t => el('tr', {dataset: {runId: t.run_id, trial: t.number}},
        el('td', {class: 'rank'}, t.rank ?? '—'), el('td', {}, t.number), el('td', {}, runLink(t.run_id)),
        el('td', {class: `status status-${t.status}`}, t.status),
        keys.map(k => el('td', {class: 'param'}, fmt.number(t.params[k]))),
        el('td', {class: 'objective'}, typeof t.value === 'number' ? fmt.number(t.value) : '—'),
        el('td', {class: 'epochs'}, t.epochs),
        el('td', {class: 'reason'}, t.error || ''))));
      drawCurves(s);
      const last = t => curve(t).at(-1);
      const complete = s.trials.filter(t => typeof t.value === 'number');
      const pruned = s.trials.filter(t => t.status === 'pruned' && last(t));
      byParam.update(params, s.objective.metric, s.trials.map(t => t.params), [
        {label: `${s.objective.metric}, complete`, color: '#2563eb', points: complete.map(t => ({params: t.params, y: t.value}))},
        {label: 'pruned, at its last epoch', color: '#9ca3af', points: pruned.map(t => ({params: t.params, y: last(t).y}))}]);
    },
    destroy: () => {
      byParam.destroy();
      if (curves)
        curves.destroy();
    },
  });
}
