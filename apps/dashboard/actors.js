// The Actors view, for operators debugging: the actor tree of GET /api/status, each actor with its
// kind, name, mailbox size and a line of its state; its whole state on demand.
import {api} from './api.js';
import {el, replace} from './dom.js';
import {report} from './errors.js';
import {poll} from './poll.js';

const refresh_ms = 5000;

/// The words that say most of an actor's state, by kind; the rest is in its details.
function stateLine(actor) {
  const s = actor.state || {};
  switch (actor.kind) {
  case 'run':
    return `${s.status} on ${s.device}, ${s.events} events, ${s.long_polls} long polls`;
  case 'run_queue':
    return `${s.runs} runs not ended, ${(s.queues || []).length} queues, ${(s.floating || []).length} floating`
           + (s.shutting_down ? ', shutting down' : '');
  case 'cache_store':
    return Object.entries(s).map(([k, v]) => `${k} ${v}`).join(', ');
  case 'worker_registry':
    return `${s.workers} workers, ${s.refused_connections} refused connections, heartbeat ${s.heartbeat_ms} ms`;
  case 'zmq_bridge':
    return `${s.endpoint}${s.encrypted ? ' (encrypted)' : ''}, ${s.peers} peers, ${s.frames_in} frames in, ${s.frames_out} out`;
  case 'worker':
    return `${s.status}${s.reason ? ` (${s.reason})` : ''}, ${actor.runs} runs followed`
           + (actor.proxy ? `, proxy mailbox ${actor.proxy.mailbox}` : '');
  default:
    return '';
  }
}

function actorNode(actor, path, open) {
  const key = `${path}/${actor.kind}:${actor.name || actor.id || ''}`;
  const details = el('details', {class: 'actor-state', open: open.has(key), dataset: {key}},
                     el('summary', {}, 'state'),
                     el('pre', {}, JSON.stringify({state: actor.state, proxy: actor.proxy}, null, 2)));
  details.addEventListener('toggle', () => (details.open ? open.add(key) : open.delete(key)));
  const children = actor.children || [];
  return el('li', {class: 'actor', dataset: {kind: actor.kind, name: actor.name || actor.id || ''}},
            el('span', {class: 'actor-kind'}, actor.kind), ' ',
            actor.name || actor.id ? el('span', {class: 'id'}, actor.name || actor.id) : null, ' ',
            actor.mailbox === undefined ? el('span', {class: 'muted'}, '(no mailbox)')
                                        : el('span', {class: 'mailbox'}, `mailbox ${actor.mailbox}`), ' ',
            el('span', {class: 'muted actor-line'}, stateLine(actor)),
            details,
            children.length ? el('ul', {class: 'actors'}, children.map(c => actorNode(c, key, open))) : null);
}

/// Starts the view in `view`.
export function startActors(view) {
  const tree = el('ul', {class: 'actors', id: 'actor-tree'});
  const note = el('p', {class: 'muted'}, `The actor tree of GET /api/status, read every ${refresh_ms / 1000} s. `
                                         + 'A mailbox that grows holds messages its actor has not handled yet.');
  replace(view, el('div', {class: 'toolbar'}, el('h1', {}, 'Actors')), note, tree);
  const open = new Set();
  const live = poll(refresh_ms, async () => {
    try {
      const status = await api('/api/status');
      const root = {...status, summary: undefined, state: {home: status.home}};
      replace(tree, actorNode(root, '', open));
      report('view:actors', null);
    } catch (e) {
      report('view:actors', `Actors: ${e.detail || e.message}`);
    }
  });
  return () => live.stop();
}
