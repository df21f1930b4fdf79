// A run's page: its summary and Cancel, its events as they arrive (the events long-poll), its loss
// and accuracy curves by epoch, its losses by optimizer step and validation batch, its final
// metrics, peak memory per card, its config, and its output log.
import {perform} from './actions.js';
import {act, api} from './api.js';
import {run_curves} from './curves.js';
import {definitions, el, replace} from './dom.js';
import {report} from './errors.js';
import * as fmt from './format.js';
import {pollObject} from './poll.js';

/// How often the run's summary is read while it is queued or running.
const refresh_ms = 2000;
/// How long one events long-poll waits on the server for the next event.
const long_poll_s = 10;
/// Events listed at once; older ones are counted, not shown, so a long run's page stays small.
const listed_events = 500;
/// Lines of the output log shown at once, the newest; `cdui logs` prints them all.
const log_lines = 1000;

/// An event as a line of the run folder's output.log (docs/cli.md, Run folder): a UTC time to the
/// second, the type, the data as compact JSON.
function logLine(e) {
  return `${new Date(e.time_ms).toISOString().replace(/\.\d{3}Z$/, 'Z')} ${e.type} ${JSON.stringify(e.data)}`;
}

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
  return definitions(rows);
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
  const canvases = {loss: el('canvas', {id: 'loss-chart'}), accuracy: el('canvas', {id: 'accuracy-chart'}),
                    step: el('canvas', {id: 'step-chart'}), batch: el('canvas', {id: 'batch-chart'})};
  const noCurves = el('p', {class: 'muted'}, 'No metric by epoch yet.');
  const chartBoxes = [el('div', {class: 'chart-box', hidden: true}, canvases.loss),
                      el('div', {class: 'chart-box', hidden: true}, canvases.accuracy)];
  const noSteps = el('p', {class: 'muted'}, 'No metric by optimizer step or validation batch yet.');
  const stepBoxes = [el('div', {class: 'chart-box', hidden: true}, canvases.step),
                     el('div', {class: 'chart-box', hidden: true}, canvases.batch)];
  const log = el('pre', {class: 'output-log', id: 'output-log'});
  const logNote = el('p', {class: 'muted', id: 'output-log-note'},
                     `Every event, one line each, as the run folder's output.log and \`cdui logs ${id}\` have them.`);
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
          section('Curves by optimizer step and validation batch', noSteps, el('div', {class: 'columns'}, stepBoxes)),
          section('Events', eventsNote, events),
          section('Config', config),
          section('Output log', logNote, log));

  const curves = new run_curves(canvases);
  if (!curves.available)
    noCurves.textContent = noSteps.textContent = 'Charts are unavailable: Chart.js did not load.';
  let logged = 0;
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
  const info = pollObject(refresh_ms, path, 'view:run', `Run ${id}`, show, r => !r.active);
  cancel.addEventListener('click', async () => {
    const answer = await perform(`Cancel ${id}`, cancel, () => act(`${path}/cancel`));
    if (answer) {
      actionNote.textContent = answer.cancelled ? `cancel requested (it was ${answer.was})`
                                                : `not cancelled: it was ${answer.was}`;
      await info.now();
    }
  });

  // The output log keeps its last log_lines lines; the note counts them all.
  const appendLog = lines => {
    if (lines.length === 0)
      return;
    logged += lines.length;
    const kept = (log.textContent ? `${log.textContent}\n` : '') + lines.join('\n');
    const all = kept.split('\n');
    const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.textContent = all.slice(-log_lines).join('\n');
    if (stick)
      log.scrollTop = log.scrollHeight;
    logNote.textContent = `${logged} lines${logged > log_lines ? `, the last ${log_lines} shown` : ''}: every `
                          + `event, as the run folder's output.log and \`cdui logs ${id}\` have them.`;
  };

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
      const lines = [];
      for (const e of page.events) {
        curves.add(e);
        lines.push(logLine(e));
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
      noSteps.hidden = curves.stepPoints() > 0;
      for (const box of stepBoxes)
        box.hidden = !noSteps.hidden;
      appendLog(lines);
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
