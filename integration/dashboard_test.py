#!/usr/bin/python3
"""The dashboard in a real browser (docs/dashboard.md): a real `cdui start` on a temporary home,
headless chromium driven through chromedriver by python3-selenium.

ctest runs it as integration.dashboard:  dashboard_test.py CDUI_BINARY SOURCE_DIR
It exits 77, which ctest reports as skipped, when chromium, chromedriver or selenium is missing
(scripts/install-deps.sh installs them). With CDUI_DASHBOARD_SCREENSHOTS=FOLDER (relative to the
source folder, e.g. docs/images) it saves a PNG of each view there.

Every wait is on a condition (WebDriverWait, or `eventually` for the API); every process it starts
is stopped by its pid, and its temporary folders are removed.
"""

import http.client
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

SKIP = 77
CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'

# The server's sentences the page must show (apps/http_access.hpp).
SIGN_IN_REFUSAL = ("the dashboard is read-only until this browser signs in: run `cdui ui` on the "
                   "server's machine and open the one-time link it prints")
CSRF_REFUSAL = ("this request carries the dashboard's cookie but not its X-CodefyUI-CSRF header: "
                "actions are taken from the dashboard's own page only")


def missing_tools():
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append('python3-selenium')
    return missing


if __name__ == '__main__' and len(sys.argv) >= 3:
    CDUI, SOURCE = sys.argv[1], sys.argv[2]
    del sys.argv[1:3]
    if missing_tools():
        print('SKIP: the dashboard test needs ' + ', '.join(missing_tools())
              + ' (apt-get install chromium chromium-driver python3-selenium, or '
              'scripts/install-deps.sh)')
        sys.exit(SKIP)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from test_processes import eventually, stop_process  # noqa: E402


class Server:
    """`cdui start --foreground --port 0` on `home` with one 1 GiB sim card; ready once its
    server.json names its pid."""

    def __init__(self, home, **env):
        self.home = home
        self.env = dict(os.environ, CODEFYUI_HOME=home, CODEFYUI_SIM_DEVICES='1x1GiB', **env)
        self.log = open(os.path.join(home, 'server.out'), 'w')
        self.proc = subprocess.Popen([CDUI, 'start', '--foreground', '--host', '127.0.0.1', '--port', '0'],
                                     env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        files = eventually(self.files, 60, 'the server writes server.json')
        self.port = files['port']
        self.base = f'http://127.0.0.1:{self.port}'
        with open(os.path.join(home, 'session.token')) as f:
            self.token = f.readline().strip()

    def files(self):
        if self.proc.poll() is not None:
            raise AssertionError(f'the server exited with {self.proc.returncode}')
        try:
            with open(os.path.join(self.home, 'server.json')) as f:
                files = json.load(f)
        except (OSError, ValueError):
            return None
        return files if files.get('pid') == self.proc.pid else None

    def request(self, method, path, body=None, headers=None, token=True):
        """(status, parsed JSON or text, headers) of one request."""
        headers = dict(headers or {})
        if token:
            headers['X-CodefyUI-Token'] = self.token
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                status, raw, got = res.status, res.read(), res.headers
        except urllib.error.HTTPError as e:
            status, raw, got = e.code, e.read(), e.headers
        text = raw.decode()
        try:
            return status, json.loads(text), got
        except ValueError:
            return status, text, got

    def run(self, run_id):
        return self.request('GET', f'/api/runs/{run_id}')[1]

    def submit(self, graph, name, **options):
        status, answer, _ = self.request('POST', '/api/runs', {'graph': graph, 'name': name, 'options': options})
        assert status == 200, answer
        return answer['run_id']

    def await_status(self, run_id, status, timeout=180):
        eventually(lambda: self.run(run_id)['status'] == status, timeout, f'run {run_id} is {status}')

    def stop(self):
        stop_process(self.proc)
        self.log.close()


def moons(epochs, device):
    """examples/moons_mlp.json with `epochs` on `device`, smaller so that an epoch takes little."""
    with open(os.path.join(SOURCE, 'examples', 'moons_mlp.json')) as f:
        graph = json.load(f)
    for node in graph['nodes']:
        if node['type'] == 'Dataset':
            node['params']['n_samples'] = 256
        if node['type'] == 'TrainingLoop':
            node['params'].update(epochs=epochs, device=device)
    return graph


def browser(profile):
    """Headless chromium through Debian's chromedriver, its profile in `profile`."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ('--headless=new', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1280,900',
                     f'--user-data-dir={profile}'):
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument('--no-sandbox')  # chromium's sandbox refuses to run as root
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def screenshot(driver, name):
    folder = os.environ.get('CDUI_DASHBOARD_SCREENSHOTS')
    if folder:
        folder = os.path.join(SOURCE, folder)
        os.makedirs(folder, exist_ok=True)
        driver.save_screenshot(os.path.join(folder, name))


def csp_violations(driver):
    return [e['message'] for e in driver.get_log('browser') if 'Content Security Policy' in e['message']]


# What setUpModule starts; tearDownModule stops each by its pid and removes the folders.
srv = None
home = None
driver = None
runs = {}
EPOCHS = 4


def sign_in(d):
    """Signs `d` in as a person would: the link `cdui ui` prints."""
    out = subprocess.run([CDUI, 'ui'], env=srv.env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    link = next(line.split()[-1] for line in out.stdout.splitlines() if line.startswith('sign in:'))
    d.get(link)
    WebDriverWait(d, 30).until(lambda d: text_of('#sign-in-state', d) == 'signed in')
    return link


def setUpModule():
    global srv, home, driver
    home = tempfile.mkdtemp(prefix='cdui-dashboard-')
    try:
        srv = Server(home)
        runs['running'] = srv.submit(moons(1_000_000, 'sim:0'), 'endless', seed=1)
        srv.await_status(runs['running'], 'running')
        runs['queued'] = srv.submit(moons(1, 'sim:0'), 'behind', seed=1,
                                    target={'memory_gib': 0.5, 'memory_source': 'estimate'})
        runs['finished'] = srv.submit(moons(EPOCHS, 'cpu'), 'four-epochs', seed=1)
        srv.await_status(runs['finished'], 'succeeded')
        driver = browser(os.path.join(home, 'chromium'))
        runs['link'] = sign_in(driver)
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    if driver is not None:
        driver.quit()
    if srv is not None:
        srv.stop()
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


def wait(d=None, timeout=30):
    # The live views redraw every 2 s: an element found may be gone a moment later.
    return WebDriverWait(d or driver, timeout, ignored_exceptions=[StaleElementReferenceException])


def text_of(css, d=None):
    """The text of the first element `css` selects, read in one step ('' when there is none)."""
    return (d or driver).execute_script(
        'const e = document.querySelector(arguments[0]); return e ? e.innerText : "";', css)


def texts_of(css, d=None):
    return (d or driver).execute_script(
        'return [...document.querySelectorAll(arguments[0])].map(e => e.innerText);', css)


def click(css, d=None):
    """Clicks the element `css` selects, finding it again if a redraw replaced it meanwhile."""
    def clicked(d):
        d.find_element(By.CSS_SELECTOR, css).click()
        return True
    wait(d).until(clicked)


def run_status_cell(run_id):
    return f'tr[data-run-id="{run_id}"] td.status'


class Dashboard(unittest.TestCase):

    def test_01_the_page_comes_with_its_policy_and_types(self):
        status, body, headers = srv.request('GET', '/', token=False)
        self.assertEqual(status, 200)
        self.assertIn("script-src 'self'", headers['Content-Security-Policy'])
        self.assertNotIn('unsafe-inline', headers['Content-Security-Policy'])
        self.assertTrue(headers['Content-Type'].startswith('text/html'))
        self.assertNotIn('<script>', body)  # no inline script: every one has a src
        for path, kind in (('/ui/app.js', 'text/javascript'), ('/ui/style.css', 'text/css'),
                           ('/ui/vendor/chart.min.js', 'text/javascript')):
            status, _, headers = srv.request('GET', path, token=False)
            self.assertEqual(status, 200, path)
            self.assertTrue(headers['Content-Type'].startswith(kind), path)

    def test_02_the_link_sets_an_httponly_strict_cookie_and_works_once(self):
        cookie = next(c for c in driver.get_cookies() if c['name'] == f'cdui_session_{srv.port}')
        self.assertTrue(cookie['httpOnly'])
        self.assertEqual(cookie['sameSite'], 'Strict')
        self.assertEqual(driver.current_url, srv.base + '/')
        # The link has been used: a second visit signs nobody in.
        status, body, _ = srv.request('GET', runs['link'][len(srv.base):], token=False)
        self.assertEqual(status, 403)
        self.assertIn('This sign-in link is not valid', body)

    def test_03_the_runs_table_shows_queued_running_and_finished_runs(self):
        driver.get(srv.base + '/#/runs')
        for kind, status in (('running', 'running'), ('queued', 'queued'), ('finished', 'succeeded')):
            wait().until(lambda d: text_of(run_status_cell(runs[kind])) == status)
        waiting = text_of(f'tr[data-run-id="{runs["queued"]}"] td.waiting')
        self.assertIn('#1', waiting)
        self.assertIn('queue of sim:0', waiting)
        self.assertEqual(text_of(f'tr[data-run-id="{runs["queued"]}"] td.budget'), '0.5 GiB (estimate)')
        wait().until(lambda d: 'epoch' in text_of(f'tr[data-run-id="{runs["running"]}"] td.progress'))
        self.assertIn(f'{EPOCHS} epochs', text_of(f'tr[data-run-id="{runs["finished"]}"] td.progress'))
        screenshot(driver, 'dashboard-runs.png')

    def test_04_the_filter_and_the_pages(self):
        # 50 runs a page: 51 queued runs make two pages of them.
        fillers = [srv.submit(moons(1, 'sim:0'), f'filler-{i}', seed=1) for i in range(50)]
        driver.get(srv.base + '/#/runs')
        Select(driver.find_element(By.ID, 'status-filter')).select_by_value('queued')
        wait().until(lambda d: text_of('#runs-count') == '1–50 of 51')
        self.assertEqual(set(texts_of('#runs-table td.status')), {'queued'})
        click('#runs-older')
        wait().until(lambda d: text_of('#runs-count') == '51–51 of 51')
        self.assertIn('status=queued', driver.current_url)
        for run_id in fillers:
            srv.request('POST', f'/api/runs/{run_id}/cancel')

    def test_05_a_runs_curves_have_one_point_per_epoch(self):
        driver.get(srv.base + f'/#/runs/{runs["finished"]}')
        series = ("return ['loss-chart', 'accuracy-chart'].flatMap(id => "
                  "Chart.getChart(document.getElementById(id)).data.datasets.map(d => [d.label, d.data.length]))")
        wait().until(lambda d: len(d.execute_script(series)) == 3)
        self.assertEqual(sorted(driver.execute_script(series)),
                         [['loop · train_loss', EPOCHS], ['loop · val_accuracy', EPOCHS], ['loop · val_loss', EPOCHS]])
        self.assertEqual(text_of('#run-status'), 'succeeded')
        final = text_of('#final-metrics')
        self.assertIn(f'loop\ttotal_epochs_run\t{EPOCHS}', final)
        self.assertIn('cpu', text_of('#peak-memory'))
        self.assertIn('execution_complete', text_of('#events'))
        self.assertIn('"seed": 1', text_of('#run-config'))
        screenshot(driver, 'dashboard-run.png')
        # Per optimizer step and validation batch: one point per metric event of that axis.
        metrics = srv.request('GET', f'/api/runs/{runs["finished"]}/metrics')[1]['metrics']
        by_step = [m for m in metrics if m['name'] == 'train_loss_batch']
        by_batch = [m for m in metrics if m['name'] == 'val_loss_step']
        self.assertGreater(len(by_step), EPOCHS)
        steps = ("return ['step-chart', 'batch-chart'].flatMap(id => "
                 "Chart.getChart(document.getElementById(id)).data.datasets.map(d => [d.label, d.data.length]))")
        expected = [['loop · train_loss_batch', len(by_step)]] + (
            [['loop · val_loss_step', len(by_batch)]] if by_batch else [])
        wait().until(lambda d: d.execute_script(steps) == expected)
        # The output log: every event, one line each, as output.log has them.
        events = srv.request('GET', f'/api/runs/{runs["finished"]}/events')[1]['events']
        wait().until(lambda d: len(text_of('#output-log').splitlines()) == len(events))
        lines = text_of('#output-log').splitlines()
        self.assertRegex(lines[0], r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ execution_start \{"deterministic":')
        self.assertTrue(lines[-1].split()[1] == 'execution_complete', lines[-1])
        self.assertIn(f'{len(events)} lines', text_of('#output-log-note'))
        driver.execute_script('document.getElementById("step-chart").scrollIntoView()')
        screenshot(driver, 'dashboard-run-steps.png')

    def test_06_a_running_runs_events_arrive_as_they_come(self):
        driver.get(srv.base + f'/#/runs/{runs["running"]}')
        # Every event counts in the note; the list keeps the last 500 only, which a run that has
        # trained a while fills at once.
        count = 'return parseInt(document.getElementById("events-note").innerText, 10) || 0'
        wait().until(lambda d: d.execute_script(count) > 0)
        seen = driver.execute_script(count)
        wait().until(lambda d: d.execute_script(count) > seen)
        self.assertEqual(text_of('#run-status'), 'running')
        self.assertTrue(driver.execute_script('return !document.getElementById("cancel-run").hidden'))

    def test_06a_the_queues_show_positions_and_device_set_reservations(self):
        # sim:0: the endless run, then `behind`; a set of sim:0 and cpu waits behind both on sim:0,
        # and at the front of cpu's queue reserves cpu: a cpu run submitted after it waits behind it.
        device_set = srv.submit(moons(1, 'sim:0'), 'set', seed=1, target={'devices': ['sim:0', 'cpu']})
        after = srv.submit(moons(1, 'cpu'), 'after-set', seed=1)
        try:
            driver.get(srv.base + '/#/queues')
            sim, cpu = '[data-queue="sim:0"]', '[data-queue="cpu"]'
            wait().until(lambda d: text_of(f'{cpu} li[data-run-id="{after}"]'))
            self.assertEqual(texts_of(f'{sim} .running li'), [runs['running']])
            self.assertIn('1/1 running', text_of(f'{sim} .slot'))
            self.assertEqual([t.split()[0] for t in texts_of(f'{sim} ol.waiting > li')], ['#1', '#2'])
            self.assertIn(runs['queued'], text_of(f'{sim} li[data-run-id="{runs["queued"]}"]'))
            self.assertIn('device set: cpu, sim:0', text_of(f'{sim} li[data-run-id="{device_set}"]'))
            front = text_of(f'{cpu} li[data-run-id="{device_set}"]')
            self.assertTrue(front.startswith('#1'), front)
            self.assertIn('reserves cpu', front)
            behind = text_of(f'{cpu} li[data-run-id="{after}"]')
            self.assertTrue(behind.startswith('#2'), behind)
            self.assertIn('reservation:', behind)
            self.assertIn('waiting', text_of('#queues-summary'))
            screenshot(driver, 'dashboard-queues.png')
        finally:
            for run_id in (device_set, after):
                srv.request('POST', f'/api/runs/{run_id}/cancel')

    def test_06b_the_actor_tree_shows_states_and_mailboxes(self):
        driver.get(srv.base + '/#/actors')
        run = f'#actor-tree li[data-kind="run"][data-name="{runs["running"]}"]'
        wait().until(lambda d: text_of(run))
        self.assertIn('running on sim:0', text_of(f'{run} > .actor-line'))
        self.assertRegex(text_of(f'{run} > .mailbox'), r'^mailbox \d+$')
        for kind in ('server', 'run_queue', 'cache_store', 'worker_registry', 'zmq_bridge'):
            self.assertTrue(text_of(f'#actor-tree li[data-kind="{kind}"]'), kind)
        click(f'{run} > details > summary')
        wait().until(lambda d: '"long_polls"' in text_of(f'{run} > details pre'))
        screenshot(driver, 'dashboard-actors.png')

    def test_07_cancel_on_a_queued_run_cancels_it(self):
        driver.get(srv.base + f'/#/runs/{runs["queued"]}')
        wait().until(lambda d: text_of('#run-status') == 'queued')
        click('#cancel-run')
        wait().until(lambda d: text_of('#run-status') == 'cancelled')
        self.assertEqual(srv.run(runs['queued'])['status'], 'cancelled')
        self.assertIn('it was queued', text_of('#action-note'))

    def test_08_an_action_without_the_cookie_is_refused_and_the_page_says_why(self):
        unsigned = srv.submit(moons(1, 'sim:0'), 'unsigned', seed=1)
        other = browser(os.path.join(home, 'chromium-unsigned'))
        try:
            other.get(srv.base + f'/#/runs/{unsigned}')
            wait(other).until(lambda d: d.execute_script('return !document.getElementById("read-only").hidden'))
            self.assertIn('cdui ui', text_of('#read-only', other))
            self.assertEqual(text_of('#sign-in-state', other), 'read-only')
            wait(other).until(lambda d: text_of('#run-status', d) == 'queued')
            click('#cancel-run', other)
            wait(other).until(lambda d: SIGN_IN_REFUSAL in text_of('#errors', d))
            screenshot(other, 'dashboard-read-only.png')
            self.assertEqual(srv.run(unsigned)['status'], 'queued')
            self.assertEqual(csp_violations(other), [])
        finally:
            other.quit()
        # The signed-in browser's cookie alone, as another site's form would send it: refused.
        cookie = next(c for c in driver.get_cookies() if c['name'] == f'cdui_session_{srv.port}')
        status, answer, _ = srv.request('POST', f'/api/runs/{unsigned}/cancel', token=False,
                                        headers={'Cookie': f'{cookie["name"]}={cookie["value"]}'})
        self.assertEqual((status, answer['detail']), (403, CSRF_REFUSAL))
        self.assertEqual(srv.run(unsigned)['status'], 'queued')
        srv.request('POST', f'/api/runs/{unsigned}/cancel')

    def test_09_a_worker_appears_within_6_s_of_its_agent_starting_and_drains(self):
        # The endless run has served (03 to 08): its core goes to the agent's start from here.
        srv.request('POST', f'/api/runs/{runs["running"]}/cancel')
        srv.await_status(runs['running'], 'cancelled')
        driver.get(srv.base + '/#/workers')
        wait().until(lambda d: d.find_element(By.ID, 'workers'))
        env = dict(srv.env, CODEFYUI_SIM_DEVICES='2x1GiB')
        agent = subprocess.Popen([CDUI, 'agent', 'start', '--foreground', '--name', 'w1'], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            started = time.monotonic()
            panel = '[data-worker="w1"]'
            wait(timeout=6).until(lambda d: text_of(panel))
            print(f'worker w1 shown {time.monotonic() - started:.1f} s after its agent started', file=sys.stderr)
            wait().until(lambda d: text_of(f'{panel} .status') == 'online')
            self.assertEqual(texts_of(f'{panel} tr[data-device] td:first-child'), ['cpu', 'sim:0', 'sim:1'])
            self.assertEqual(text_of(f'{panel} tr[data-device="sim:0"] td.slots'), '0/1')
            # What the agent's machine says of each card (for a CUDA card: its name, UUID and memory).
            self.assertEqual(text_of(f'{panel} tr[data-device="sim:1"] td.card-label'),
                             'simulated accelerator #1 (1.00 GiB, executes on the CPU)')
            self.assertIn('s ago', text_of(f'{panel} .heartbeat'))
            click(f'{panel} button[data-action="drain"]')
            wait().until(lambda d: text_of(f'{panel} .status') == 'draining')
            self.assertTrue(next(w for w in srv.request('GET', '/api/workers')[1]['workers']
                                 if w['name'] == 'w1')['draining'])
            click(f'{panel} button[data-action="undrain"]')
            wait().until(lambda d: text_of(f'{panel} .status') == 'online')
        finally:
            stop_process(agent)

    def test_09a_a_shared_cards_bar_moves_when_a_budgeted_run_starts(self):
        env = dict(srv.env, CODEFYUI_SIM_DEVICES='2x1GiB')
        agent = subprocess.Popen([CDUI, 'agent', 'start', '--foreground', '--name', 'w2'], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            driver.get(srv.base + '/#/workers')
            card = '[data-worker="w2"] tr[data-device="sim:0"]'
            wait(timeout=60).until(lambda d: text_of(f'[data-worker="w2"] .status') == 'online')
            # Paged: one worker a page here (20 by default), in name order.
            driver.get(srv.base + '/#/workers?per_page=1')
            wait().until(lambda d: text_of('#workers-count') == '1–1 of 2')
            self.assertEqual(driver.execute_script(
                'return [...document.querySelectorAll("#workers > [data-worker]")].map(e => e.dataset.worker)'), ['w1'])
            click('#workers-next')
            wait().until(lambda d: text_of('#workers-count') == '2–2 of 2')
            self.assertIn('offset=1', driver.current_url)
            self.assertTrue(text_of('[data-worker="w2"]'))
            driver.get(srv.base + '/#/workers')
            wait().until(lambda d: text_of('#workers-count') == '1–2 of 2')
            self.assertEqual(texts_of('[data-worker="w2"] tr[data-device="cpu"] .mode'), ['exclusive'])
            click(f'{card} button[data-mode="shared"]')
            wait().until(lambda d: text_of(f'{card} button[aria-pressed="true"]') == 'Shared by memory')
            self.assertEqual(next(dev for dev in next(w for w in srv.request('GET', '/api/workers')[1]['workers']
                                                      if w['name'] == 'w2')['devices']
                                  if dev['name'] == 'sim:0')['mode'], 'shared')
            ledger = ("const e = document.querySelector(arguments[0] + ' .ledger'); if (!e) return null;"
                      "return {in_use: +e.dataset.inUse, may_take: +e.dataset.mayTake, total: +e.dataset.total,"
                      " width: e.querySelector('.ledger-in-use').getBoundingClientRect().width};")
            before = wait().until(lambda d: d.execute_script(ledger, card))
            self.assertEqual((before['in_use'], before['may_take'], before['total'], before['width']),
                             (0, 2**30, 2**30, 0))
            budgeted = runs['budgeted'] = srv.submit(moons(1_000_000, 'sim:0'), 'budgeted', seed=1,
                                                     target={'worker': 'w2', 'devices': ['sim:0'], 'memory_gib': 0.25})
            after = wait(timeout=60).until(lambda d: (lambda l: l if l and l['in_use'] > 0 else None)(
                d.execute_script(ledger, card)))
            self.assertEqual((after['in_use'], after['may_take']), (2**28, 2**30 - 2**28))
            self.assertGreater(after['width'], 0)
            self.assertIn('in use 256.0 MiB', text_of(f'{card} .ledger-figures'))
            self.assertIn(budgeted, text_of(f'{card} .ledger-runs'))
            driver.execute_script('document.querySelector(\'[data-worker="w2"]\').scrollIntoView()')
            screenshot(driver, 'dashboard-workers.png')
            srv.request('POST', f'/api/runs/{budgeted}/cancel')
            srv.await_status(budgeted, 'cancelled')
            wait(timeout=60).until(lambda d: (d.execute_script(ledger, card) or {}).get('in_use') == 0)
            click(f'{card} button[data-mode="exclusive"]')
            wait().until(lambda d: text_of(f'{card} button[aria-pressed="true"]') == 'Exclusive')

            # Remove asks a second time, saying what it does; "Keep it" keeps the worker.
            click('[data-worker="w2"] button[data-action="remove"]')
            wait().until(lambda d: d.execute_script('return document.getElementById("worker-dialog").open'))
            question = text_of('#worker-dialog')
            self.assertIn('Remove worker w2?', question)
            self.assertIn('Its agent is disconnected and exits', question)
            self.assertIn('end failed', question)
            self.assertIn('w2', [w['name'] for w in srv.request('GET', '/api/workers')[1]['workers']])
            click('#worker-dialog button[data-answer="no"]')
            wait().until(lambda d: not d.execute_script('return document.getElementById("worker-dialog").open'))
            self.assertIn('w2', [w['name'] for w in srv.request('GET', '/api/workers')[1]['workers']])
            click('[data-worker="w2"] button[data-action="remove"]')
            click('#worker-dialog button[data-answer="yes"]')
            wait().until(lambda d: not text_of('[data-worker="w2"]'))
            self.assertNotIn('w2', [w['name'] for w in srv.request('GET', '/api/workers')[1]['workers']])
            self.assertEqual(agent.wait(60), 1)  # refused: removed by an operator
        finally:
            stop_process(agent)

    def test_09b_add_worker_shows_the_enrollment_command_then_re_key_and_remove(self):
        driver.get(srv.base + '/#/workers')
        click('#add-worker')
        driver.find_element(By.ID, 'enroll-name').send_keys('remote-1')
        driver.find_element(By.ID, 'enroll-host').send_keys('10.0.0.5')
        click('#enroll-submit')
        wait().until(lambda d: text_of('#enroll-command'))
        command = text_of('#enroll-command')
        self.assertIn("> remote-1.credential && cdui agent start --name remote-1 --server tcp://10.0.0.5:", command)
        self.assertIn('--credential remote-1.credential', command)
        self.assertIn('which no other machine can reach', text_of('#enroll-warning'))  # a loopback server
        screenshot(driver, 'dashboard-add-worker.png')
        click('#enroll-close')
        wait().until(lambda d: text_of('[data-enrolled="remote-1"]'))
        self.assertEqual(srv.request('GET', '/api/workers')[1]['enrolled'], [{'connected': False, 'name': 'remote-1'}])
        # A second enrollment of the name: the server's sentence, in the dialog and the banner.
        click('#add-worker')
        driver.find_element(By.ID, 'enroll-name').send_keys('remote-1')
        click('#enroll-submit')
        wait().until(lambda d: 'is enrolled already' in text_of('#enroll-error'))
        click('#enroll-close')
        self.assertIn('Enroll remote-1: worker \'remote-1\' is enrolled already', text_of('#errors'))
        # Re-key asks first, then shows the new command.
        click('[data-enrolled="remote-1"] button[data-action="rekey"]')
        click('#worker-dialog button[data-answer="yes"]')
        wait().until(lambda d: text_of('#enroll-command'))
        credential = re.compile('cdui-wk-[0-9a-f]{64}')
        self.assertNotEqual(credential.search(text_of('#enroll-command')).group(), credential.search(command).group())
        click('#enroll-close')
        click('[data-enrolled="remote-1"] button[data-action="remove"]')
        wait().until(lambda d: 'Remove worker remote-1?' in text_of('#worker-dialog'))
        click('#worker-dialog button[data-answer="yes"]')
        wait().until(lambda d: not text_of('[data-enrolled="remote-1"]'))
        self.assertEqual(srv.request('GET', '/api/workers')[1]['enrolled'], [])

    def test_09c_a_sweeps_ranked_table_and_its_objective_by_each_param(self):
        graph = moons(1, 'cpu')
        body = {'graph': graph, 'name': 'lr-batch',
                'spec': {'method': 'grid', 'params': [
                    {'node': 'optimizer', 'param': 'lr', 'values': [0.05, 0.01]},
                    {'node': 'train_loader', 'param': 'batch_size', 'values': [16, 64]}]},
                'objective': {'metric': 'final_train_loss', 'direction': 'min'}, 'options': {'seed': 1}}
        status, answer, _ = srv.request('POST', '/api/sweeps', body)
        self.assertEqual(status, 200, answer)
        sweep = answer['sweep_id']
        driver.get(srv.base + '/#/sweeps')
        wait().until(lambda d: text_of(f'tr[data-sweep-id="{sweep}"]'))
        self.assertIn('min final_train_loss', text_of(f'tr[data-sweep-id="{sweep}"]'))
        click(f'tr[data-sweep-id="{sweep}"] a')
        wait(timeout=120).until(lambda d: text_of('#sweep-state') == 'finished')
        ranked = srv.request('GET', f'/api/sweeps/{sweep}')[1]['variants']
        self.assertEqual(texts_of('#sweep-variants tbody td:nth-child(3)'), [v['run_id'] for v in ranked])
        self.assertEqual(text_of('#sweep-variants tbody tr td.rank'), '1')
        self.assertEqual(texts_of('#sweep-variants thead th')[4:7],
                         ['optimizer.lr', 'train_loader.batch_size', 'final_train_loss'])
        points = ("return [...document.querySelectorAll('#sweep-charts canvas')].map(c => "
                  "[c.dataset.param, Chart.getChart(c).data.datasets[0].data.length])")
        wait().until(lambda d: d.execute_script(points) == [['optimizer.lr', 4], ['train_loader.batch_size', 4]])
        self.assertIn(ranked[0]['run_id'], text_of('#sweep-summary [data-field="best"]'))
        screenshot(driver, 'dashboard-sweep.png')
        status, csv, _ = srv.request('GET', f'/api/sweeps/{sweep}/results.csv')
        self.assertEqual(status, 200)
        self.assertTrue(csv.startswith('rank,index,run_id,status,optimizer.lr,train_loader.batch_size,'), csv)
        # An unknown sweep: the server's sentence in the banner.
        driver.get(srv.base + '/#/sweeps/nope')
        wait().until(lambda d: "Sweep nope: no sweep has the id 'nope'" in text_of('#errors'))

    def test_09f_a_studys_trials_ranked_their_curves_and_which_were_pruned(self):
        def study(name, epochs, trials):
            body = {'graph': moons(epochs, 'cpu'), 'name': name,
                    'space': [{'node': 'optimizer', 'param': 'lr', 'min': 0.0003, 'max': 0.3, 'scale': 'log'},
                              {'node': 'train_loader', 'param': 'batch_size', 'values': [16, 64]}],
                    'objective': {'metric': 'val_accuracy', 'direction': 'max'},
                    'budget': {'trials': trials, 'max_parallel': 1}, 'sampler': 'random',
                    'pruner': {'name': 'asha', 'reduction_factor': 3}, 'seed': 1, 'options': {'seed': 1}}
            status, answer, _ = srv.request('POST', '/api/studies', body)
            self.assertEqual(status, 200, answer)
            return answer['study_id']

        started = time.monotonic()
        searched = study('moons-lr', 9, 6)
        endless = study('endless', 1_000_000, 2)
        # Cancel on the page of a study whose first trial trains until it is stopped.
        driver.get(srv.base + '/#/studies')
        wait().until(lambda d: text_of(f'tr[data-study-id="{endless}"]'))
        self.assertIn('max val_accuracy', text_of(f'tr[data-study-id="{searched}"]'))
        click(f'tr[data-study-id="{endless}"] a')
        wait().until(lambda d: text_of('#study-state') in ('queued', 'running'))
        click('#cancel-study')
        wait(timeout=60).until(lambda d: text_of('#study-state') == 'cancelled')
        self.assertIn('cancel asked', text_of('#action-note'))
        self.assertEqual(srv.request('GET', f'/api/studies/{endless}')[1]['state'], 'cancelled')

        driver.get(srv.base + f'/#/studies/{searched}')
        wait(timeout=300).until(lambda d: text_of('#study-state') == 'finished')
        answer = srv.request('GET', f'/api/studies/{searched}')[1]
        trials = answer['trials']
        complete = sorted((t for t in trials if t['value'] is not None), key=lambda t: (-t['value'], t['number']))
        pruned = [t for t in trials if t['status'] == 'pruned']
        self.assertTrue(pruned, answer)  # ASHA stops some: the seed makes it the same each time
        # Ranked: the complete trials best first, then the others by number.
        rows = [e.get_attribute('data-run-id') for e in driver.find_elements(By.CSS_SELECTOR, '#study-trials tbody tr')]
        rest = sorted((t for t in trials if t['value'] is None), key=lambda t: t['number'])
        self.assertEqual(rows, [t['run_id'] for t in complete + rest])
        self.assertEqual(text_of('#study-trials tbody tr td.rank'), '1')
        self.assertEqual(texts_of('#study-trials thead th')[4:7], ['optimizer.lr', 'train_loader.batch_size', 'val_accuracy'])
        for t in pruned:
            row = f'#study-trials tr[data-run-id="{t["run_id"]}"]'
            self.assertEqual(text_of(f'{row} td.status'), 'pruned')
            self.assertEqual(text_of(f'{row} td.reason'), t['error'])
            self.assertTrue(t['error'].startswith('pruned at epoch '), t['error'])
        # One curve per trial, a point per epoch it reported; the pruned ones say so.
        curves = ("return Chart.getChart(document.getElementById('study-curves')).data.datasets"
                  ".map(d => [d.label, d.data.length])")
        expected = sorted([f'trial {t["number"]}' + (' (pruned)' if t['status'] == 'pruned' else ''),
                           len(t['intermediate_values'])] for t in trials)
        wait().until(lambda d: sorted(d.execute_script(curves)) == expected)
        # The objective against each param: the complete trials' values, the pruned ones' last.
        points = ("return [...document.querySelectorAll('#study-charts canvas')].map(c => "
                  "[c.dataset.param, ...Chart.getChart(c).data.datasets.map(d => d.data.length)])")
        wait().until(lambda d: d.execute_script(points) == [[p, len(complete), len(pruned)]
                                                            for p in ('optimizer.lr', 'train_loader.batch_size')])
        self.assertIn(f'trial {answer["best"]["number"]}', text_of('#study-summary [data-field="best"]'))
        self.assertIn('asha (', text_of('#study-summary [data-field="pruner"]'))
        print(f'study {searched}: {len(trials)} trials, {len(pruned)} pruned, {answer["epochs"]} epochs; '
              f'the test took {time.monotonic() - started:.1f} s', file=sys.stderr)
        screenshot(driver, 'dashboard-study.png')
        driver.execute_script('document.getElementById("study-charts").scrollIntoView()')
        screenshot(driver, 'dashboard-study-trials.png')
        driver.get(srv.base + '/#/studies/nope')
        wait().until(lambda d: "Study nope: no study has the id 'nope'" in text_of('#errors'))

    def test_09d_the_runs_filter_by_worker_and_device(self):
        def ids(query):
            return [r['run_id'] for r in srv.request('GET', f'/api/runs?{query}')[1]['runs']]

        driver.get(srv.base + '/#/runs')
        wait().until(lambda d: d.find_element(By.CSS_SELECTOR, '#worker-filter option[value="w1"]'))
        Select(driver.find_element(By.ID, 'worker-filter')).select_by_value('local')
        wait().until(lambda d: 'worker=local' in d.current_url)
        wait().until(lambda d: d.find_element(By.CSS_SELECTOR, '#device-filter option[value="sim:0"]'))
        Select(driver.find_element(By.ID, 'device-filter')).select_by_value('sim:0')
        wait().until(lambda d: 'device=sim' in d.current_url)
        every = ids('worker=local&device=sim:0&limit=1000')
        self.assertIn(runs['running'], every)
        self.assertNotIn(runs['finished'], every)  # it ran on cpu
        self.assertNotIn(runs['budgeted'], every)  # w2's sim:0
        local_sim = every[:50]  # the first page
        wait().until(lambda d: [e.get_attribute('data-run-id') for e in
                                d.find_elements(By.CSS_SELECTOR, '#runs-table tbody tr')] == local_sim)
        driver.get(srv.base + '/#/runs?worker=w2')
        wait().until(lambda d: [e.get_attribute('data-run-id') for e in
                                d.find_elements(By.CSS_SELECTOR, '#runs-table tbody tr')] == [runs['budgeted']])
        self.assertEqual(text_of('#runs-count'), '1–1 of 1')
        self.assertEqual(ids('worker=w2&device=sim:0'), [runs['budgeted']])
        self.assertEqual(ids('worker=w2&device=sim:1'), [])
        # A filter the server refuses: its sentence in the banner.
        driver.get(srv.base + '/#/runs?worker=-bad')
        wait().until(lambda d: "Runs: query parameter 'worker' must be" in text_of('#errors'))
        status, answer, _ = srv.request('GET', '/api/runs?device=a/b')
        self.assertEqual((status, answer['detail']),
                         (400, "query parameter 'device' must be a device as its machine names it (cpu, sim:0, "
                               "cuda:1), not 'a/b'"))

    def test_09e_this_servers_sim_card_shared_by_memory_shows_its_ledger(self):
        driver.get(srv.base + '/#/workers')
        card = '#this-server tr[data-device="sim:0"]'
        wait().until(lambda d: text_of(f'{card} button[aria-pressed="true"]') == 'Exclusive')
        self.assertEqual(text_of('#this-server tr[data-device="cpu"] button[aria-pressed="true"]'), 'Exclusive')
        click(f'{card} button[data-mode="shared"]')
        wait().until(lambda d: text_of(f'{card} button[aria-pressed="true"]') == 'Shared by memory')
        wait().until(lambda d: 'a new budget may take 1.0 GiB · of 1.0 GiB' in text_of(f'{card} .ledger-figures'))
        devices = srv.request('GET', '/api/devices')[1]['devices']
        self.assertEqual(next(d for d in devices if d['device'] == 'sim:0')['mode'], 'shared')
        click(f'{card} button[data-mode="exclusive"]')
        wait().until(lambda d: text_of(f'{card} button[aria-pressed="true"]') == 'Exclusive')

    def test_10_where_reads_need_the_token_the_page_loads_and_reads_with_the_cookie(self):
        other_home = os.path.join(home, 'reads-need-the-token')
        os.makedirs(other_home)
        guarded = Server(other_home, CODEFYUI_HTTP_READ_TOKEN='on')
        def page(path, headers=None):
            return guarded.request('GET', path, token=False, headers=headers)

        try:
            self.assertEqual(page('/')[0], 200)
            self.assertEqual(page('/ui/app.js')[0], 200)
            self.assertFalse(page('/api/ui/session')[1]['signed_in'])
            status, answer, _ = page('/api/runs', {'X-CodefyUI-CSRF': 'none'})
            self.assertEqual((status, answer['detail']), (403, SIGN_IN_REFUSAL))
            out = subprocess.run([CDUI, 'ui'], env=guarded.env, capture_output=True, text=True, timeout=60)
            link = next(line.split()[-1] for line in out.stdout.splitlines() if line.startswith('sign in:'))
            connection = http.client.HTTPConnection('127.0.0.1', guarded.port, timeout=30)
            connection.request('GET', link[len(guarded.base):])
            answer = connection.getresponse()
            self.assertEqual((answer.status, answer.getheader('Location')), (303, '/'))
            cookie = answer.getheader('Set-Cookie').split(';')[0]
            connection.close()
            status, answer, _ = page('/api/runs', {'Cookie': cookie})
            self.assertEqual((status, answer['total']), (200, 0))
            self.assertTrue(page('/api/ui/session', {'Cookie': cookie})[1]['reads_need_sign_in'])
        finally:
            guarded.stop()

    def test_11_no_page_broke_the_content_security_policy(self):
        self.assertEqual(csp_violations(driver), [])

    def test_11a_with_10000_runs_and_200_workers_each_view_fetches_one_page(self):
        big_home = os.path.join(home, 'ten-thousand')
        os.makedirs(big_home)
        started = time.monotonic()
        # A real run, then its row copied 9,999 times under new ids into the stopped server's
        # cdui.db (SQLite, one transaction: a sweep of 10,000 takes 5 to 20 s to submit here, and
        # as long again to end). Then 200 enrolled workers: they need no agent.
        first = Server(big_home)
        try:
            run_id = first.submit(moons(1, 'cpu'), 'original', seed=1)
            first.await_status(run_id, 'succeeded')
        finally:
            first.stop()
        store = sqlite3.connect(os.path.join(big_home, 'cdui.db'))
        with store:
            columns = [c[1] for c in store.execute('PRAGMA table_info(runs)') if c[1] != 'seq']
            row = dict(zip(columns, store.execute(f'SELECT {", ".join(columns)} FROM runs').fetchone()))
            copies = [{**row, 'id': f'{i:08x}', 'name': f'copy-{i}', 'created_ms': row['created_ms'] + i}
                      for i in range(1, 10_000)]
            store.executemany(f'INSERT INTO runs ({", ".join(columns)}) VALUES ({", ".join(":" + c for c in columns)})',
                              copies)
        store.close()
        big = Server(big_home, CODEFYUI_MAX_SWEEP_RUNS='2000')
        try:
            for i in range(200):
                status, answer, _ = big.request('POST', '/api/workers/enroll', {'name': f'w{i:03}'})
                self.assertEqual(status, 200, answer)
            prepared = time.monotonic() - started

            # The API: whole lists as before unless a page is asked for.
            everyone = big.request('GET', '/api/workers')[1]
            self.assertEqual((len(everyone['enrolled']), 'enrolled_total' in everyone), (200, False))
            page = big.request('GET', '/api/workers?limit=20&offset=0&enrolled_limit=20&enrolled_offset=190')[1]
            self.assertEqual([e['name'] for e in page['enrolled']], [f'w{i}' for i in range(190, 200)])
            self.assertEqual((page['enrolled_total'], page['enrolled_offset'], page['total'], page['workers']),
                             (200, 190, 0, []))
            self.assertEqual(big.request('GET', '/api/runs?limit=1')[1]['total'], 10_000)
            self.assertEqual(big.request('GET', '/api/sweeps?limit=5&offset=1')[1],
                             {'limit': 5, 'offset': 1, 'sweeps': [], 'total': 0})
            self.assertEqual(big.request('GET', '/api/studies')[1], {'studies': []})

            # The page, as an operator opens it: the first of 201 pages of runs, then the next.
            driver.get(big.base + '/#/runs')
            wait(timeout=60).until(lambda d: text_of('#runs-count') == '1–50 of 10000')
            self.assertEqual(len(texts_of('#runs-table tbody tr')), 50)
            self.assertEqual(texts_of('#runs-table tbody tr td:nth-child(2) a')[:2], ['copy-9999', 'copy-9998'])
            click('#runs-older')
            wait().until(lambda d: text_of('#runs-count') == '51–100 of 10000')
            self.assertEqual(len(texts_of('#runs-table tbody tr')), 50)
            driver.get(big.base + '/#/workers')
            wait().until(lambda d: text_of('#enrolled-count') == '1–20 of 200')
            self.assertEqual(texts_of('#enrolled tbody td:first-child'), [f'w{i:03}' for i in range(20)])
            self.assertTrue(driver.execute_script('return !document.getElementById("enrolled-next").disabled'))
            click('#enrolled-next')
            wait().until(lambda d: text_of('#enrolled-count') == '21–40 of 200')
            self.assertEqual(texts_of('#enrolled tbody td:first-child'), [f'w{i:03}' for i in range(20, 40)])
            self.assertIn('enrolled_offset=20', driver.current_url)
            driver.get(big.base + '/#/sweeps')
            wait().until(lambda d: d.execute_script('return !document.querySelector("#sweeps-table + p").hidden'))
            self.assertTrue(text_of('#sweeps-table + p').startswith('No sweep yet'))

            # 2,000 runs queued on sim:0 behind a run that holds it (a sweep of one-node graphs):
            # the Queues view lists the first 50 and says how many more wait.
            holder = big.submit(moons(1_000_000, 'sim:0'), 'holder', seed=1)
            tiny = {'nodes': [{'id': 'data', 'type': 'Dataset', 'params': {'name': 'moons', 'n_samples': 16}}],
                    'edges': []}
            status, answer, _ = big.request('POST', '/api/sweeps', {
                'graph': tiny, 'options': {'device': 'sim:0'},
                'spec': {'method': 'grid', 'params': [{'node': 'data', 'param': 'n_samples', 'min': 16,
                                                       'max': 2015, 'type': 'int', 'count': 2000}]},
                'objective': {'metric': 'loss', 'direction': 'min'}})
            self.assertEqual(status, 200, answer)
            driver.get(big.base + '/#/queues')
            queue = '[data-queue="sim:0"]'
            wait(timeout=60).until(lambda d: text_of(f'{queue} .more') == 'and 1,950 more')
            self.assertEqual(len(texts_of(f'{queue} ol.waiting > li')), 50)
            self.assertEqual(texts_of(f'{queue} ol.waiting > li')[0].split()[:2], ['#1', answer['run_ids'][0]])
            self.assertIn('2,000 waiting', text_of('#queues-summary'))

            # Every request the page made asked for a page, and no answer was large.
            fetched = driver.execute_script(
                "return performance.getEntriesByType('resource').filter(e => e.name.includes('/api/'))"
                ".map(e => [e.name.slice(location.origin.length), e.decodedBodySize])")
            listing = [(path, size) for path, size in fetched
                       if path.split('?')[0] in ('/api/runs', '/api/workers', '/api/sweeps', '/api/studies',
                                                 '/api/queues')]
            self.assertTrue(listing)
            for path, size in listing:
                self.assertIn('limit=', path)
                self.assertLess(size, 100_000, path)
            for path in sorted(set(p for p, _ in listing)):
                answer = big.request('GET', path)[1]
                rows = {key: len(answer[key]) for key in ('runs', 'workers', 'enrolled', 'sweeps', 'waiting')
                        if key in answer}
                print(f'{path}: {rows}, {max(n for p, n in listing if p == path)} bytes', file=sys.stderr)
            whole = len(json.dumps(big.request('GET', '/api/runs?limit=1000')[1]))
            print(f'10,000 runs and 200 enrolled workers: prepared in {prepared:.1f} s, checked in '
                  f'{time.monotonic() - started - prepared:.1f} s; a page of 1,000 runs is {whole} bytes',
                  file=sys.stderr)
        finally:
            big.stop()

    def test_12_sign_out_ends_the_sign_in(self):
        driver.get(srv.base + '/#/runs')
        wait().until(lambda d: text_of('#sign-in-state') == 'signed in')
        cookie = next(c for c in driver.get_cookies() if c['name'] == f'cdui_session_{srv.port}')
        jar = {'Cookie': f'{cookie["name"]}={cookie["value"]}'}
        # Without the page's anti-CSRF header, as another site's request: refused, still signed in.
        status, answer, _ = srv.request('DELETE', '/api/ui/session', token=False, headers=jar)
        self.assertEqual((status, answer['detail']), (403, CSRF_REFUSAL))
        click('#sign-out')
        wait().until(lambda d: text_of('#sign-in-state') == 'read-only')
        self.assertIn('cdui ui', text_of('#read-only'))
        self.assertTrue(driver.execute_script('return document.getElementById("sign-out").hidden'))
        self.assertEqual([c for c in driver.get_cookies() if c['name'] == cookie['name']], [])
        # The old cookie, sent again, is no sign-in any more.
        self.assertFalse(srv.request('GET', '/api/ui/session', token=False, headers=jar)[1]['signed_in'])
        self.assertEqual(csp_violations(driver), [])


if __name__ == '__main__':
    unittest.main(verbosity=2)
