// A run's page: its summary and Cancel, its events as they arrive (the events long-poll), its loss
// and accuracy curves by epoch, its final metrics, peak memory per card, and its config.
import {act, api} from './api.js';
import {run_curves} from './curves.js';
import {el, replace} from './dom.js';
import {report} from './errors.js';
import * as fmt from './format.js';
import {poll} from './poll.js';

/// How often the run's summary is read while it is queued or running.
const refresh_ms = 2000;
/// How long one events long-poll waits on the server for the next event.
const long_poll_s = 10;
/// Events listed at once; older ones are counted, not shown, so a long run's page stays small.
const listed_events = 500;

/// One line of an event, in a person's words.
function describe(e) {
  const d = e.data || {};
  switch (e.type) {
  case 'node_status':
    return `${d.node} (${d.type}) ${d.status}${d.seconds !== undefined ? ` in ${fmt.number(d.seconds)} s` : ''}`;
  case 'progress':
    return `${d.node}: ${fmt.place(d)}, loss ${fmt.number(d.loss)}`;
  case 'metric':
    return `${d.node}: ${d.name} = ${fmt.number(d.value)} at ${d.axis || 'epoch'} ${d.step}`;
  case 'run_warning':
    return `${d.kind}: ${d.message}`;
  case 'execution_start':
    return `on ${d.device}, seed ${d.seed}, ${d.nodes} nodes`;
  case 'execution_complete':
    return `completed in ${fmt.number(d.seconds)} s`;
  case 'execution_error':
    return d.error;
  case 'execution_stopped':
    return d.message || d.reason;
  default:
    return JSON.stringify(d).slice(0, 300);
  }
}

function summaryRows(run) {
  const rows = [
    ['Status', run.status], ['Run', run.run_id], ['Name', run.name || '—'], ['Target', fmt.target(run)],
    ['Devices', fmt.devices(run)], ['Budget', fmt.budget(run)],
  ];
  if (run.status === 'queued')
    rows.push(['Waiting', `#${run.queue_position} · ${run.waiting_reason || 'starting'}`]);
  if (run.progress)
    rows.push(['Progress', fmt.place(run.progress)]);
  if (run.error)
    rows.push(['Error', run.error]);
  rows.push(['Submitted', new Date(run.created_ms).toLocaleString()]);
  if (run.started_ms)
    rows.push(['Started', new Date(run.started_ms).toLocaleString()]);
  if (run.finished_ms)
    rows.push(['Finished', new Date(run.finished_ms).toLocaleString()]);
  rows.push(['Duration', fmt.runDuration(run)]);
  return rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {dataset: {field: k.toLowerCase()}}, v)]);
}

function finalMetricRows(run) {
  const rows = [];
  for (const [node, metrics] of Object.entries(run.final_metrics || {}))
    for (const [key, value] of Object.entries(metrics || {}))
      if (key !== 'peak_memory_bytes' && key !== 'activation_bytes')
        rows.push(el('tr', {}, el('td', {}, node), el('td', {}, key), el('td', {}, fmt.number(value))));
  return rows;
}

function peakMemoryRows(run) {
  const rows = [];
  for (const [node, metrics] of Object.entries(run.final_metrics || {}))
    for (const [device, bytes] of Object.entries((metrics && metrics.peak_memory_bytes) || {}))
      rows.push(el('tr', {}, el('td', {}, device), el('td', {}, node), el('td', {}, fmt.bytes(bytes))));
  return rows;
}

function section(title, ...children) {
  return el('section', {class: 'panel'}, el('h2', {}, title), children);
}

/// Starts the page of run `id` in `view`.
export function startRun(view, id) {
  const path = `/api/runs/${encodeURIComponent(id)}`;
  const title = el('h1', {}, id);
  const status = el('span', {class: 'status', id: 'run-status'});
  const cancel = el('button', {type: 'button', id: 'cancel-run', class: 'danger', hidden: true}, 'Cancel');
  const actionNote = el('span', {class: 'muted', id: 'action-note'});
  const summary = el('dl', {class: 'summary', id: 'run-summary'});
  const lossCanvas = el('canvas', {id: 'loss-chart'});
  const accuracyCanvas = el('canvas', {id: 'accuracy-chart'});
  const noCurves = el('p', {class: 'muted'}, 'No metric by epoch yet.');
  const chartBoxes = [el('div', {class: 'chart-box', hidden: true}, lossCanvas),
                      el('div', {class: 'chart-box', hidden: true}, accuracyCanvas)];
  const finals = el('tbody');
  const peaks = el('tbody');
  const config = el('div', {id: 'run-config'});
  const events = el('ol', {class: 'events', id: 'events'});
  const eventsNote = el('p', {class: 'muted', id: 'events-note'}, 'Waiting for events…');
  replace(view,
          el('p', {}, el('a', {href: '#/runs'}, '‹ Runs')),
          el('div', {class: 'toolbar'}, title, status, cancel, actionNote),
          el('div', {class: 'columns'},
             section('Summary', summary),
             section('Curves by epoch', noCurves, chartBoxes)),
          el('div', {class: 'columns'},
             section('Final metrics',
                     el('table', {id: 'final-metrics'},
                        el('thead', {}, el('tr', {}, el('th', {}, 'Node'), el('th', {}, 'Metric'), el('th', {}, 'Value'))),
                        finals)),
             section('Peak memory per card',
                     el('table', {id: 'peak-memory'},
                        el('thead', {}, el('tr', {}, el('th', {}, 'Card'), el('th', {}, 'Node'), el('th', {}, 'Peak'))),
                        peaks))),
          section('Events', eventsNote, events),
          section('Config', config));

  const curves = new run_curves(lossCanvas, accuracyCanvas);
  if (!curves.available)
    noCurves.textContent = 'Charts are unavailable: Chart.js did not load.';
  let run = null;
  let nodeConfigs = [];
  const showConfig = () => {
    replace(config,
            el('h3', {}, 'Options'), el('pre', {}, JSON.stringify(run ? run.options : {}, null, 2)),
            nodeConfigs.map(e => [el('h3', {}, `${e.data.node}`), el('pre', {}, JSON.stringify(e.data, null, 2))]));
  };
  const show = r => {
    run = r;
    title.textContent = r.name ? `${r.name} (${r.run_id})` : r.run_id;
    status.textContent = r.status;
    status.className = `status status-${r.status}`;
    cancel.hidden = !r.active;
    replace(summary, summaryRows(r));
    replace(finals, finalMetricRows(r));
    replace(peaks, peakMemoryRows(r));
    showConfig();
  };
  const info = poll(refresh_ms, async () => {
    if (run && !run.active)
      return;
    try {
      show(await api(path));
      report('view:run', null);
    } catch (e) {
      report('view:run', `Run ${id}: ${e.detail || e.message}`);
    }
  });
  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    try {
      const answer = await act(`${path}/cancel`);
      actionNote.textContent = answer.cancelled ? `cancel requested (it was ${answer.was})`
                                                : `not cancelled: it was ${answer.was}`;
      report('view:action', null);
      await info.now();
    } catch (e) {
      report('view:action', `Cancel ${id}: ${e.detail || e.message}`);
    } finally {
      cancel.disabled = false;
    }
  });

  // The events, as they come: a long-poll from the last cursor until the run has ended.
  const stopEvents = new AbortController();
  let listed = 0;
  let total = 0;
  const follow = async () => {
    let cursor = 0;
    while (!stopEvents.signal.aborted) {
      let page;
      try {
        page = await api(`${path}/events?cursor=${cursor}&wait=${long_poll_s}`, {signal: stopEvents.signal});
        report('view:events', null);
      } catch (e) {
        if (e.name === 'AbortError')
          return;
        report('view:events', `Events of ${id}: ${e.detail || e.message}`);
        if (e.status === 404)
          return;
        await new Promise(resolve => setTimeout(resolve, refresh_ms));
        continue;
      }
      for (const e of page.events) {
        curves.add(e);
        if (e.type === 'node_config') {
          nodeConfigs.push(e);
          showConfig();
        }
        ++total;
        if (e.type === 'metric' && e.data.axis !== undefined)
          continue;  // by step or batch: one a step, too many to list
        events.append(el('li', {dataset: {type: e.type}}, el('span', {class: 'muted'}, fmt.clock(e.time_ms)), ' ',
                         el('span', {class: 'event-type'}, e.type), ' ', describe(e)));
        if (++listed > listed_events)
          events.firstChild.remove();
      }
      curves.draw();
      noCurves.hidden = curves.points() > 0;
      for (const box of chartBoxes)
        box.hidden = !noCurves.hidden;
      eventsNote.textContent = `${total} events${listed > listed_events ? `, the last ${listed_events} listed` : ''}`
                               + (page.finished ? '; the run has ended.' : '; more as they come.');
      cursor = page.cursor;
      if (page.finished) {
        await info.now();
        return;
      }
    }
  };
  follow();
  return () => {
    stopEvents.abort();
    info.stop();
    curves.destroy();
  };
}
