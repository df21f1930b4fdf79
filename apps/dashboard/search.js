// What the Sweeps and Studies views share. Both are searches over a graph's params ranked by an
// objective: a list, newest first, one page at a time (the API's `limit` and `offset`); a search's
// page with its state, Cancel while it has not ended, a summary, and a chart of the objective
// against each param it searches (Chart.js scatter).
import {perform} from './actions.js';
import {act, api} from './api.js';
import {definitions, el, replace} from './dom.js';
import {report} from './errors.js';
import {offsetFrom, pageQuery, pager} from './pager.js';
import {poll, pollObject} from './poll.js';

const refresh_ms = 2000;
/// Searches a page of a list shows.
const page_size = 50;
const ended = new Set(['finished', 'failed', 'cancelled']);

/// Runs or trials by status: "2 succeeded, 1 pruned".
export function counts(c) {
  return Object.entries(c || {}).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(', ') || '—';
}

export function objectiveText(o) {
  return o ? `${o.direction} ${o.metric}` : '—';
}

export function when(ms) {
  return ms ? new Date(ms).toLocaleString() : '—';
}

function capital(word) {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/// Starts the list of `kind` in `view` at the page of `params` (offset). `kind`: `noun` ("sweep"),
/// `path` ("sweeps": the hash, the API's path and its list's key), `id` (the id field), `empty` (the
/// sentence for none), `columns` and `cells(item)`: the columns between its name and its times.
export function startSearchList(view, params, kind) {
  const offset = offsetFrom(params);
  const go = o => { location.hash = o ? `#/${kind.path}?offset=${o}` : `#/${kind.path}`; };
  const pages = pager(kind.path, {offset, size: page_size, go});
  const body = el('tbody');
  const empty = el('p', {class: 'muted', hidden: true}, kind.empty);
  const title = capital(kind.path);
  replace(view, el('div', {class: 'toolbar'}, el('h1', {}, title), pages.controls),
          el('table', {id: `${kind.path}-table`},
             el('thead', {}, el('tr', {}, ['State', capital(kind.noun), ...kind.columns, 'Created', 'Finished']
                                            .map(h => el('th', {}, h)))), body),
          empty);
  const dataKey = `${kind.noun}Id`;  // data-sweep-id, data-study-id
  const live = poll(refresh_ms, async () => {
    try {
      const page = await api(`/api/${kind.path}?${pageQuery(page_size, offset)}`);
      const items = page[kind.path];
      replace(body, items.map(s => el('tr', {dataset: {[dataKey]: s[kind.id]}},
        el('td', {class: `status state status-${s.state}`}, s.state),
        el('td', {}, el('a', {href: `#/${kind.path}/${encodeURIComponent(s[kind.id])}`}, s.name || s[kind.id]),
           el('span', {class: 'muted id'}, ` ${s[kind.id]}`)),
        kind.cells(s).map(c => el('td', {}, c)),
        el('td', {}, when(s.created_ms)), el('td', {}, when(s.finished_ms)))));
      pages.show(items.length, page.total);
      empty.hidden = page.total > 0;
      report(`view:${kind.path}`, null);
    } catch (e) {
      report(`view:${kind.path}`, `${title}: ${e.detail || e.message}`);
    }
  });
  return () => live.stop();
}

/// The page of the search `id` of `kind` (as for the list) in `view`: a link back to the list, its
/// title, state and Cancel, then `page.links`, its summary (`page.summary(answer)`: [label, value]
/// rows) and `page.sections`; `page.show(answer)` draws each answer, until the search has ended;
/// `page.destroy()`, if any, when the page stops.
export function startSearchPage(view, kind, id, page) {
  const path = `/api/${kind.path}/${encodeURIComponent(id)}`;
  const title = el('h1', {}, id);
  const state = el('span', {class: 'status', id: `${kind.noun}-state`});
  const cancel = el('button', {type: 'button', id: `cancel-${kind.noun}`, class: 'danger', hidden: true},
                    `Cancel ${kind.noun}`);
  const actionNote = el('span', {class: 'muted', id: 'action-note'});
  const summary = el('dl', {class: 'summary', id: `${kind.noun}-summary`});
  replace(view, el('p', {}, el('a', {href: `#/${kind.path}`}, `‹ ${capital(kind.path)}`)),
          el('div', {class: 'toolbar'}, title, state, cancel, actionNote, page.links || []),
          el('section', {class: 'panel'}, el('h2', {}, 'Summary'), summary),
          page.sections);
  const show = s => {
    title.textContent = s.name ? `${s.name} (${id})` : id;
    state.textContent = s.state;
    state.className = `status status-${s.state}`;
    cancel.hidden = ended.has(s.state) || s.state === 'cancelling';
    replace(summary, definitions(page.summary(s)));
    page.show(s);
  };
  const live = pollObject(refresh_ms, path, `view:${kind.noun}`, `${capital(kind.noun)} ${id}`, show,
                          s => ended.has(s.state));
  cancel.addEventListener('click', async () => {
    const answer = await perform(`Cancel ${kind.noun} ${id}`, cancel, () => act(`${path}/cancel`));
    if (answer) {
      actionNote.textContent = answer.cancelled ? `cancel asked (now ${answer.state})` : `not cancelled: it is ${answer.state}`;
      await live.now();
    }
  });
  return () => {
    live.stop();
    if (page.destroy)
      page.destroy();
  };
}

/// The params a search varies, in its spec's order (a sweep's `params`, a study's `space`):
/// "node.param", and whether its range is on a log scale.
export function searchedParams(list) {
  return (list || []).map(p => ({key: `${p.node}.${p.param}`, log: p.scale === 'log'}));
}

function xScale(param, values) {
  const title = {display: true, text: param.key};
  if (values.every(v => typeof v === 'number'))
    return {type: param.log ? 'logarithmic' : 'linear', title};
  return {type: 'category', labels: values.map(String), title};  // values that are not numbers
}

/// A scatter chart per searched param of the objective against the param's value, in `box`; `none`
/// is shown while no point has an objective.
export class param_charts {
  constructor(box, none) {
    this.box = box;
    this.none = none;
    this.charts = new Map();
  }

  /// Draws `series` ([{label, color, points: [{params, y}]}]) against each of `params`
  /// (searchedParams); `all`: the params of every variant or trial, whose values the axes name.
  update(params, metric, all, series) {
    if (typeof window.Chart !== 'function') {
      this.none.textContent = 'Charts are unavailable: Chart.js did not load.';
      return;
    }
    for (const p of params) {
      const values = [...new Set(all.map(v => v[p.key]))];
      if (!this.charts.has(p.key)) {
        const canvas = el('canvas', {dataset: {param: p.key}});
        this.box.append(el('div', {class: 'chart-box'}, canvas));
        this.charts.set(p.key, new window.Chart(canvas, {
          type: 'scatter',
          data: {datasets: series.map(s => ({label: s.label, data: [], backgroundColor: s.color, pointRadius: 4}))},
          options: {animation: false, responsive: true, maintainAspectRatio: false,
                    plugins: {legend: {display: series.length > 1}},
                    scales: {x: xScale(p, values), y: {title: {display: true, text: metric}}}},
        }));
      }
      const chart = this.charts.get(p.key);
      const numeric = values.every(v => typeof v === 'number');
      chart.options.scales.x = xScale(p, values);
      series.forEach((s, i) => {
        chart.data.datasets[i].data = s.points.map(pt => ({x: numeric ? pt.params[p.key] : String(pt.params[p.key]),
                                                           y: pt.y}));
      });
      chart.update('none');
    }
    const scored = series.some(s => s.points.length > 0);
    this.none.hidden = scored;
    this.box.hidden = !scored;
  }

  destroy() {
    for (const chart of this.charts.values())
      chart.destroy();
  }
}
