// The Workers view: each worker's status and why, version, heartbeat age, running runs and devices
// (slots taken of the limit, memory free of total), with Drain and Undrain.
import {act, api} from './api.js';
import {el, replace} from './dom.js';
import {report} from './errors.js';
import * as fmt from './format.js';
import {poll} from './poll.js';

/// How often the view is refreshed. The seed's Workers panel refreshes every 5 s; 2 s shows a new
/// worker within the issue's 6 s of its agent starting even when the agent takes 3 s to start.
const refresh_ms = 2000;

function memory(device) {
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

function devicesTable(worker) {
  return el('table', {class: 'devices'},
            el('thead', {}, el('tr', {}, ['Device', 'Kind', 'Slots', 'Memory', 'Mode'].map(h => el('th', {}, h)))),
            el('tbody', {}, worker.devices.map(d => el('tr', {dataset: {device: d.name}},
                                                       el('td', {}, d.name), el('td', {}, d.kind),
                                                       el('td', {class: 'slots'}, slots(d)),
                                                       el('td', {}, memory(d)),
                                                       el('td', {}, d.mode || 'exclusive')))));
}

function workerPanel(worker, onAction) {
  const verb = worker.draining ? 'undrain' : 'drain';
  const button = el('button', {type: 'button', class: 'worker-action', dataset: {action: verb}},
                    worker.draining ? 'Undrain' : 'Drain');
  button.addEventListener('click', () => onAction(worker.name, verb, button));
  const runs = worker.running_runs.length === 0
                 ? 'none'
                 : worker.running_runs.map(id => el('a', {href: `#/runs/${encodeURIComponent(id)}`}, id, ' '));
  return el('section', {class: 'panel worker', dataset: {worker: worker.name}},
            el('div', {class: 'toolbar'},
               el('h2', {}, worker.name),
               el('span', {class: `status status-${worker.status}`}, worker.status),
               worker.reason ? el('span', {class: 'reason'}, worker.reason) : null,
               button),
            el('dl', {class: 'summary'},
               el('dt', {}, 'Version'), el('dd', {}, worker.version),
               el('dt', {}, 'Heartbeat'), el('dd', {class: 'heartbeat'}, `${worker.heartbeat_age_s.toFixed(1)} s ago`),
               el('dt', {}, 'Running'), el('dd', {}, runs),
               el('dt', {}, 'Joined with'), el('dd', {}, worker.one_shot ? `${worker.credential}, one-shot` : worker.credential)),
            devicesTable(worker));
}

/// Starts the view in `view`.
export function startWorkers(view) {
  const list = el('div', {id: 'workers'});
  const empty = el('p', {class: 'muted', hidden: true},
                   'No worker has joined this server since it started. `cdui agent start` on a machine '
                   + 'starts one; `cdui workers enroll NAME` gives another machine its command.');
  const refused = el('div', {id: 'refused'});
  replace(view, el('div', {class: 'toolbar'}, el('h1', {}, 'Workers')), empty, list, refused);
  let live = null;
  const onAction = async (name, verb, button) => {
    button.disabled = true;
    try {
      await act(`/api/workers/${encodeURIComponent(name)}/${verb}`);
      report('view:action', null);
      await live.now();
    } catch (e) {
      report('view:action', `${verb === 'drain' ? 'Drain' : 'Undrain'} ${name}: ${e.detail || e.message}`);
      button.disabled = false;
    }
  };
  live = poll(refresh_ms, async () => {
    try {
      const answer = await api('/api/workers');
      replace(list, answer.workers.map(w => workerPanel(w, onAction)));
      empty.hidden = answer.workers.length > 0;
      replace(refused, answer.refused_connections.length === 0 ? [] : el('section', {class: 'panel'},
        el('h2', {}, 'Refused connections'),
        el('ul', {}, answer.refused_connections.map(
          r => el('li', {}, `${fmt.clock(r.time_ms)} ${r.name} (${r.version}): ${r.reason}`)))));
      report('view:workers', null);
    } catch (e) {
      report('view:workers', `Workers: ${e.detail || e.message}`);
    }
  });
  return () => live.stop();
}
