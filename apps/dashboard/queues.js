// The Queues view: each device's queue from GET /api/queues: the runs holding its slot, the first
// runs waiting in order with their positions and why (the server sends the first `shown` of each
// queue, so 10,000 queued runs cost what 50 do), and the device sets that reserve it; the runs
// waiting for any worker or the pool; the interactive lane.
import {api} from './api.js';
import {el, replace, runLink} from './dom.js';
import {report} from './errors.js';
import {poll} from './poll.js';

const refresh_ms = 2000;
/// Waiting runs listed per queue.
const shown = 50;

/// "and 9,950 more" under a list the server cut at `listed` of `length`.
function more(listed, length) {
  return length > listed ? el('p', {class: 'muted more'}, `and ${(length - listed).toLocaleString()} more`) : null;
}

/// Each run's queues, in queue-key order: a run in more than one is a device set.
function devicesOfRuns(queues) {
  const of = new Map();
  for (const q of queues)
    for (const id of [...q.running, ...q.waiting]) {
      if (!of.has(id))
        of.set(id, []);
      of.get(id).push(q.device);
    }
  return of;
}

function waitingItem(id, index, queue, why, sets) {
  const set = sets.get(id) || [];
  const w = why.get(id);
  return el('li', {dataset: {runId: id}},
            el('span', {class: 'position'}, `#${index + 1}`), ' ', runLink(id),
            set.length > 1 ? el('span', {class: 'device-set'}, ` device set: ${set.join(', ')}`) : null,
            w ? el('div', {class: 'reason'}, `${w.kind}: ${w.reason}`) : null);
}

function queuePanel(queue, why, sets) {
  return el('section', {class: 'panel queue', dataset: {queue: queue.device}},
            el('div', {class: 'toolbar'},
               el('h2', {}, queue.device),
               el('span', {class: `status ${queue.open ? 'status-online' : 'status-draining'}`},
                  queue.open ? 'open' : 'closed'),
               el('span', {class: 'slot'}, `${queue.running.length}/${queue.limit} running`),
               el('span', {class: 'muted'}, `${queue.queue_length} waiting`)),
            (queue.shared || []).length ? el('p', {class: 'muted shared'}, queue.shared.map(
              s => `shared budget ${s.group}: ${s.running} of ${s.limit} running, with ${s.with.join(', ')}`).join('; '))
              : null,
            el('h3', {}, 'Running'),
            queue.running.length === 0 ? el('p', {class: 'muted'}, 'none')
              : el('ul', {class: 'running'}, queue.running.map(id => el('li', {dataset: {runId: id}}, runLink(id),
                  (sets.get(id) || []).length > 1 ? el('span', {class: 'device-set'}, ` device set: ${sets.get(id).join(', ')}`) : null))),
            el('h3', {}, 'Waiting, front first'),
            queue.waiting.length === 0 ? el('p', {class: 'muted'}, 'none')
              : el('ol', {class: 'waiting'}, queue.waiting.map((id, i) => waitingItem(id, i, queue, why, sets))),
            more(queue.waiting.length, queue.queue_length));
}

/// Starts the view in `view`; `params` may ask for the idle queues too (?idle=1).
export function startQueues(view, params) {
  const showIdle = params.get('idle') === '1';
  const idle = el('input', {type: 'checkbox', id: 'show-idle', checked: showIdle,
                            onchange: e => { location.hash = e.target.checked ? '#/queues?idle=1' : '#/queues'; }});
  const summary = el('ul', {class: 'summary-text', id: 'queues-summary'});
  const list = el('div', {id: 'queues', class: 'columns'});
  const floating = el('div', {id: 'floating'});
  const interactive = el('div', {id: 'interactive'});
  replace(view, el('div', {class: 'toolbar'}, el('h1', {}, 'Queues'),
                   el('label', {}, idle, ' show idle queues')),
          summary, list, floating, interactive);
  const live = poll(refresh_ms, async () => {
    try {
      const state = await api(`/api/queues?limit=${shown}`);
      const why = new Map(state.waiting.map(w => [w.run_id, w]));
      const sets = devicesOfRuns(state.queues);
      const busy = state.queues.filter(q => q.running.length > 0 || q.queue_length > 0);
      const listed = showIdle ? state.queues : busy;
      const running = new Set(state.queues.flatMap(q => q.running)).size + state.interactive.running.length;
      replace(summary, el('li', {}, `${running} running, ${state.waiting_runs.toLocaleString()} waiting, in ${busy.length} `
                                    + `busy of ${state.queues.length} device queues`
                                    + (state.shutting_down ? '; the server is shutting down' : '')));
      replace(list, listed.length ? listed.map(q => queuePanel(q, why, sets))
                                  : el('p', {class: 'muted'}, `No queue holds a run now (${state.queues.length} idle).`));
      replace(floating, state.floating.length === 0 ? [] : el('section', {class: 'panel', dataset: {queue: 'floating'}},
        el('h2', {}, 'Waiting for any worker or the one-shot pool'),
        el('ol', {class: 'waiting'}, state.floating.map((id, i) => waitingItem(id, i, {device: 'any'}, why, sets))),
        more(state.floating.length, state.floating_length)));
      const lane = state.interactive || {running: []};
      replace(interactive, lane.running.length === 0 ? [] : el('section', {class: 'panel'},
        el('h2', {}, `Interactive lane (${lane.running.length} of ${lane.limit})`),
        el('ul', {}, lane.running.map(r => el('li', {}, runLink(r.run_id || r.id || String(r)),
                                             r.session ? ` session ${r.session}` : '')))));
      report('view:queues', null);
    } catch (e) {
      report('view:queues', `Queues: ${e.detail || e.message}`);
    }
  });
  return () => live.stop();
}
