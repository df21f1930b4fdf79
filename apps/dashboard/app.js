// The dashboard's shell: the sign-in state, the error banner, and the views by the URL's hash
// (#/runs, #/runs/<id>, #/queues, #/workers, #/sweeps, #/sweeps/<id>, #/studies, #/studies/<id>,
// #/actors). A view is started on a container and returns its stop().
import {perform} from './actions.js';
import {act, api, useCsrf} from './api.js';
import {replace} from './dom.js';
import {clearReports, report} from './errors.js';
import {startRuns} from './runs.js';
import {startRun} from './run.js';
import {startActors} from './actors.js';
import {startQueues} from './queues.js';
import {startStudies, startStudy} from './studies.js';
import {startSweep, startSweeps} from './sweeps.js';
import {startWorkers} from './workers.js';

/// Whether this browser has signed in. Actions are offered either way: without the sign-in the
/// server refuses them, and the banner shows its sentence.
async function loadSession() {
  try {
    const s = await api('/api/ui/session');
    useCsrf(s.csrf);
    const state = document.getElementById('sign-in-state');
    state.textContent = s.signed_in ? 'signed in' : 'read-only';
    state.className = `sign-in-state ${s.signed_in ? 'signed-in' : 'read-only'}`;
    document.getElementById('sign-out').hidden = !s.signed_in;
    const banner = document.getElementById('read-only');
    banner.hidden = s.signed_in;
    if (!s.signed_in)
      replace(banner, s.sign_in.charAt(0).toUpperCase(), s.sign_in.slice(1),
              '. Until then the server refuses every action (Cancel, Drain, sharing, enrolling, ...).');
    report('session', null);
  } catch (e) {
    report('session', `Sign-in state: ${e.detail || e.message}`);
  }
}

async function loadVersion() {
  try {
    const v = await api('/api/version');
    document.getElementById('server-version').textContent = `server ${v.version}`;
  } catch (e) {
    report('version', `Version: ${e.detail || e.message}`);
  }
}

/// Ends this browser's sign-in (the server forgets it and clears the cookie): read-only again.
async function signOut(e) {
  if (await perform('Sign out', e.target, () => act('/api/ui/session', {method: 'DELETE'})))
    await loadSession();
}

let stopView = () => {};

function route() {
  stopView();
  clearReports('view');
  const hash = location.hash || '#/runs';
  const [path, query] = hash.slice(1).split('?');
  const params = new URLSearchParams(query || '');
  const view = document.getElementById('view');
  view.replaceChildren();
  for (const link of document.querySelectorAll('nav a'))
    link.classList.toggle('active', path.startsWith(link.getAttribute('href').slice(1)));
  const run = path.match(/^\/runs\/([^/]+)$/);
  const sweep = path.match(/^\/sweeps\/([^/]+)$/);
  const study = path.match(/^\/studies\/([^/]+)$/);
  if (run)
    stopView = startRun(view, decodeURIComponent(run[1]));
  else if (sweep)
    stopView = startSweep(view, decodeURIComponent(sweep[1]));
  else if (path === '/sweeps')
    stopView = startSweeps(view, params);
  else if (study)
    stopView = startStudy(view, decodeURIComponent(study[1]));
  else if (path === '/studies')
    stopView = startStudies(view, params);
  else if (path === '/queues')
    stopView = startQueues(view, params);
  else if (path === '/workers')
    stopView = startWorkers(view, params);
  else if (path === '/actors')
    stopView = startActors(view);
  else
    stopView = startRuns(view, params);
}

window.addEventListener('hashchange', route);
document.getElementById('sign-out').addEventListener('click', signOut);
loadSession().then(route);
loadVersion();
