#!/usr/bin/python3
"""The Kubernetes recipe (packaging/kubernetes/, docs/operations.md#kubernetes) holds together.

ctest runs it as integration.kubernetes:  kubernetes_test.py CDUI_BINARY SOURCE_DIR

Nothing here runs a cluster. The test parses every manifest and checks the references between
them (kinds, namespaces, selectors, ports, the Secret's name and keys, volumes and mounts, each
$(VAR), the image, the user) and every option of the containers' args against the real binary's
--help. Then it runs, on this machine, what the pods would run: the server with the StatefulSet's
args (its ports replaced by free ones), the enrollment block of docs/operations.md with a stand-in
`kubectl` that makes the Secret, each agent pod's init container and agent with the manifests' args
(the Service's host replaced by 127.0.0.1), and checks that each agent joins the server.

It needs python3-yaml (python3-torch, which scripts/install-deps.sh installs, depends on it).
Every process it starts is stopped by its pid, and its temporary folders are removed.
It exits 0 when every check passes, 1 otherwise, each failure naming the file, the object and
the field.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from test_processes import eventually, stop_process

try:
    import yaml
except ImportError:
    print('FAIL: the Kubernetes test needs python3-yaml (apt-get install python3-yaml)')
    sys.exit(1)

RECIPE = 'packaging/kubernetes'
EXAMPLE_SECRET = 'fleet-secret.example.yaml'
KUSTOMIZATION = 'kustomization.yaml'
EXPECTED_FILES = ['Dockerfile', 'namespace.yaml', 'server.yaml', 'agent-daemonset.yaml',
                  'agent-job.yaml', EXAMPLE_SECRET, KUSTOMIZATION]
KNOWN_KINDS = {
    ('v1', 'Namespace'), ('v1', 'Service'), ('v1', 'Secret'), ('apps/v1', 'StatefulSet'),
    ('apps/v1', 'DaemonSet'), ('batch/v1', 'Job'),
    ('kustomize.config.k8s.io/v1beta1', 'Kustomization'),
}
WORKLOADS = ('StatefulSet', 'DaemonSet', 'Job')
# What the downward API gives an env var (fieldRef.fieldPath) that the recipe may use.
FIELD_PATHS = {'metadata.name', 'metadata.namespace', 'spec.nodeName', 'status.podIP',
               'spec.serviceAccountName', 'status.hostIP'}
WORKER_CHARS = re.compile(r'^[A-Za-z0-9._-]+$')
VAR_REF = re.compile(r'\$\(([A-Za-z_][A-Za-z0-9_]*)\)')


class Checks:
    def __init__(self):
        self.failures = []
        self.passed = 0

    def ok(self, condition, where, what, why=''):
        """One check: `where` is 'file: Kind/name: field'; `what` says what holds."""
        if condition:
            self.passed += 1
            print(f'ok    {where}: {what}')
        else:
            why = why or f'expected: {what}'
            self.failures.append(f'{where}: {why}')
            print(f'FAIL  {where}: {why}')
        return condition


CHECKS = Checks()


def where(obj, field=''):
    name = obj['_name']
    text = f"{obj['_file']}: {obj.get('kind', '?')}/{name}"
    return f'{text}: {field}' if field else text


# ---------------------------------------------------------------------------------------------
# Reading the recipe

def load_recipe(folder):
    objects = []
    for name in EXPECTED_FILES:
        CHECKS.ok(os.path.isfile(os.path.join(folder, name)), f'{RECIPE}/{name}', 'exists')
    for name in sorted(os.listdir(folder)):
        if not name.endswith('.yaml'):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, encoding='utf-8') as f:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            CHECKS.ok(False, name, 'parses as YAML', f'does not parse as YAML: {e}')
            continue
        CHECKS.ok(bool(docs), name, f'parses as YAML ({len(docs)} object(s))', 'holds no object')
        for doc in docs:
            if not isinstance(doc, dict):
                CHECKS.ok(False, name, 'is a mapping', 'holds a document that is not a mapping')
                continue
            doc['_file'] = name
            doc['_name'] = (doc.get('metadata') or {}).get(
                'name', 'kustomization' if doc.get('kind') == 'Kustomization' else '(no name)')
            pair = (doc.get('apiVersion'), doc.get('kind'))
            CHECKS.ok(pair in KNOWN_KINDS, where(doc, 'apiVersion/kind'),
                      f'{pair[0]} {pair[1]} is a known pair',
                      f'{pair[0]} {pair[1]} is not one of the kinds the recipe uses '
                      f'({", ".join(sorted(v + " " + k for v, k in KNOWN_KINDS))})')
            if doc.get('kind') != 'Kustomization':
                CHECKS.ok(doc['_name'] != '(no name)', where(doc, 'metadata.name'), 'is set', 'is not set')
            objects.append(doc)
    return objects


def read_dockerfile(path):
    info = {'from': None, 'user': None, 'entrypoint': None, 'env': {}, 'args': {}}
    if not os.path.isfile(path):
        return info
    lines = []
    with open(path, encoding='utf-8') as f:
        pending = ''
        for raw in f:
            line = raw.rstrip('\n')
            if not pending and line.lstrip().startswith('#'):
                continue
            if line.endswith('\\'):
                pending += line[:-1] + ' '
                continue
            lines.append(pending + line)
            pending = ''
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) < 2:
            continue
        word, rest = parts[0].upper(), parts[1].strip()
        if word == 'FROM':
            info['from'] = rest
        elif word == 'USER':
            info['user'] = rest
        elif word == 'ENTRYPOINT':
            try:
                info['entrypoint'] = json.loads(rest)
            except ValueError:
                info['entrypoint'] = rest
        elif word == 'ENV':
            for key, value in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)=(\S+)', rest):
                info['env'][key] = value
        elif word == 'ARG' and '=' in rest:
            key, value = rest.split('=', 1)
            info['args'][key] = value
    return info


def cdui_help(cdui, *subcommand):
    """The options `cdui SUBCOMMAND --help` lists: {option: takes a value}."""
    out = subprocess.run([cdui, *subcommand, '--help'], capture_output=True, text=True, timeout=60)
    options = {}
    for line in out.stdout.splitlines():
        m = re.match(r'\s+(?:-\w,)?(--[a-z][a-z0-9-]*)( [A-Z]+)?', line)
        if m:
            options[m.group(1)] = bool(m.group(2))
    return out.returncode, options


def parse_args(args, options, obj, field):
    """--option value pairs of a container's args (after its subcommand), each option checked
    against the binary's --help."""
    parsed = {}
    i = 0
    while i < len(args):
        arg = str(args[i])
        if not arg.startswith('--'):
            CHECKS.ok(False, where(obj, field), '', f"'{arg}' is not an option (a stray argument)")
            i += 1
            continue
        name, _, inline = arg.partition('=')
        known = CHECKS.ok(name in options, where(obj, field),
                          f'{name} is an option of the real cdui',
                          f'{name} is not an option of the real cdui (it has '
                          f'{", ".join(sorted(options))})')
        if known and options[name]:
            if inline:
                parsed[name] = inline
            elif i + 1 < len(args) and not str(args[i + 1]).startswith('--'):
                parsed[name] = str(args[i + 1])
                i += 1
            else:
                CHECKS.ok(False, where(obj, field), '', f'{name} needs a value')
        else:
            parsed[name] = True
        i += 1
    return parsed


def pod_spec(obj):
    return ((obj.get('spec') or {}).get('template') or {}).get('spec') or {}


def pod_labels(obj):
    return (((obj.get('spec') or {}).get('template') or {}).get('metadata') or {}).get('labels') or {}


def all_containers(obj):
    spec = pod_spec(obj)
    return [(c, 'initContainers') for c in spec.get('initContainers') or []] + \
           [(c, 'containers') for c in spec.get('containers') or []]


def cfield(container, kind, rest):
    return f"spec.template.spec.{kind}[{container.get('name', '?')}].{rest}"


def env_of(container):
    return {e.get('name'): e for e in container.get('env') or []}


def is_subset(small, big):
    return bool(small) and all(big.get(k) == v for k, v in small.items())


def resolve_port(container, port):
    """A probe's or a Service's target port, by name or number, as a number."""
    if isinstance(port, int):
        return port
    for p in container.get('ports') or []:
        if p.get('name') == port:
            return p.get('containerPort')
    return None


def mount_for(container, path):
    """The volume mount that holds `path` (the longest mountPath that is it or a parent)."""
    best = None
    for m in container.get('volumeMounts') or []:
        mp = m.get('mountPath', '').rstrip('/')
        if path == mp or path.startswith(mp + '/'):
            if best is None or len(mp) > len(best[0]):
                best = (mp, m)
    return best


def fleet_prefix_of_docs(source):
    path = os.path.join(source, 'docs', 'operations.md')
    with open(path, encoding='utf-8') as f:
        text = f.read()
    at = text.find('\n## Kubernetes')
    section = text[at:] if at >= 0 else ''
    end = section.find('\n## ', 1)
    section = section[:end] if end >= 0 else section
    CHECKS.ok(at >= 0, 'docs/operations.md', 'has the section ## Kubernetes')
    m = re.search(r"cdui workers enroll '([^']*)\*'", section)
    CHECKS.ok(m is not None, 'docs/operations.md: ## Kubernetes',
              "enrolls a fleet (cdui workers enroll 'PREFIX*')")
    return section, (m.group(1) if m else None)


def is_fleet_prefix(prefix):
    # actors/policy/worker_table.cpp, is_fleet_pattern
    return (1 <= len(prefix) <= 63 and prefix[0] not in '.-'
            and WORKER_CHARS.match(prefix) is not None)


# ---------------------------------------------------------------------------------------------
# The static checks

def static_checks(cdui, source, folder):
    objects = load_recipe(folder)
    docker = read_dockerfile(os.path.join(folder, 'Dockerfile'))
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o.get('kind'), []).append(o)

    version_out = subprocess.run([cdui, '--version'], capture_output=True, text=True, timeout=60)
    version = version_out.stdout.split()[-1] if version_out.stdout.split() else '?'
    print(f'the real binary: {cdui}, cdui {version}')

    # The Dockerfile: the image the manifests name.
    df = 'Dockerfile'
    CHECKS.ok(docker['from'] == 'debian:bookworm-slim', f'{df}: FROM', 'is debian:bookworm-slim',
              f"is {docker['from']!r}, not debian:bookworm-slim (the package is Debian 12's)")
    deb = docker['args'].get('CDUI_DEB', '')
    CHECKS.ok(deb == f'cdui_{version}_amd64.deb', f'{df}: ARG CDUI_DEB',
              f'names the package of this version, {deb}',
              f"is {deb!r}, not cdui_{version}_amd64.deb (the binary's version)")
    entry = docker['entrypoint']
    CHECKS.ok(isinstance(entry, list) and entry and os.path.basename(entry[-1]) == 'cdui',
              f'{df}: ENTRYPOINT', "ends with cdui, so the containers' args are cdui's",
              f"is {entry!r}: it must end with /usr/bin/cdui (the containers' args are cdui's)")
    user = (docker['user'] or '').split(':')
    uid = int(user[0]) if user[0].isdigit() else None
    gid = int(user[1]) if len(user) > 1 and user[1].isdigit() else uid
    CHECKS.ok(uid is not None and uid != 0, f'{df}: USER', f'is a numeric non-root uid ({uid})',
              f"is {docker['user']!r}: a numeric uid other than 0, which runAsUser repeats")

    # The kustomization and the namespace.
    kust = (by_kind.get('Kustomization') or [{}])[0]
    namespace = kust.get('namespace')
    kfile = KUSTOMIZATION
    CHECKS.ok(bool(namespace), f'{kfile}: namespace', f'is set ({namespace})')
    manifests = sorted(n for n in os.listdir(folder)
                       if n.endswith('.yaml') and n not in (KUSTOMIZATION, EXAMPLE_SECRET))
    resources = kust.get('resources') or []
    CHECKS.ok(sorted(resources) == manifests, f'{kfile}: resources',
              f'lists every manifest but the example Secret ({", ".join(manifests)})',
              f'lists {resources}, not every manifest but {EXAMPLE_SECRET}: {manifests}')
    CHECKS.ok(EXAMPLE_SECRET not in resources, f'{kfile}: resources',
              f'leaves out {EXAMPLE_SECRET} (apply -k never replaces the real Secret)')
    for image in kust.get('images') or []:
        CHECKS.ok(image.get('name') == 'cdui', f'{kfile}: images',
                  "renames the image cdui", f"names {image.get('name')!r}, an image no container has")
    namespaces = [o['_name'] for o in by_kind.get('Namespace', [])]
    CHECKS.ok(namespaces == [namespace], 'namespace.yaml: Namespace',
              f'is the kustomization\'s namespace {namespace}',
              f'names {namespaces}, not the kustomization\'s namespace {namespace!r}')
    for o in objects:
        if o.get('kind') in ('Namespace', 'Kustomization'):
            continue
        ns = (o.get('metadata') or {}).get('namespace')
        CHECKS.ok(ns == namespace, where(o, 'metadata.namespace'), f'is {namespace}',
                  f'is {ns!r}, not the kustomization\'s namespace {namespace!r}')

    # The example Secret: the names and keys the pods may refer to.
    secrets = {}
    for s in by_kind.get('Secret', []):
        CHECKS.ok(s['_file'] == EXAMPLE_SECRET, where(s), f'is in {EXAMPLE_SECRET}',
                  f'a Secret outside {EXAMPLE_SECRET}: a real credential has no place in the recipe')
        values = dict(s.get('stringData') or {})
        values.update({k: '(base64)' for k in (s.get('data') or {})})
        secrets[s['_name']] = values
    CHECKS.ok(bool(secrets), EXAMPLE_SECRET, 'defines a Secret')

    # The workloads: image, user, volumes, env, $(VAR).
    workloads = [o for o in objects if o.get('kind') in WORKLOADS]
    images = set()
    for w in workloads:
        spec = pod_spec(w)
        sc = spec.get('securityContext') or {}
        CHECKS.ok(sc.get('runAsNonRoot') is True,
                  where(w, 'spec.template.spec.securityContext.runAsNonRoot'), 'is true')
        CHECKS.ok(sc.get('runAsUser') == uid, where(w, 'spec.template.spec.securityContext.runAsUser'),
                  f'is the image\'s user {uid}', f"is {sc.get('runAsUser')!r}, not the Dockerfile's USER {uid}")
        CHECKS.ok(sc.get('runAsGroup') == gid, where(w, 'spec.template.spec.securityContext.runAsGroup'),
                  f'is the image\'s group {gid}', f"is {sc.get('runAsGroup')!r}, not the Dockerfile's group {gid}")
        CHECKS.ok(sc.get('fsGroup') == gid, where(w, 'spec.template.spec.securityContext.fsGroup'),
                  f'is {gid}, so the volumes and the Secret\'s files are the user\'s group\'s',
                  f"is {sc.get('fsGroup')!r}, not {gid}: the user could not write its volume or read the Secret")
        volumes = {v.get('name'): v for v in spec.get('volumes') or []}
        claims = {(c.get('metadata') or {}).get('name'): c
                  for c in (w.get('spec') or {}).get('volumeClaimTemplates') or []}
        mounted = set()
        for c, kind in all_containers(w):
            images.add(c.get('image'))
            CHECKS.ok(c.get('image') == f'cdui:{version}', where(w, cfield(c, kind, 'image')),
                      f'is cdui:{version}, the image the Dockerfile makes for this version',
                      f"is {c.get('image')!r}, not cdui:{version} (one image, the binary's version)")
            for m in c.get('volumeMounts') or []:
                mounted.add(m.get('name'))
                CHECKS.ok(m.get('name') in volumes or m.get('name') in claims,
                          where(w, cfield(c, kind, f"volumeMounts[{m.get('name')}]")),
                          'names a declared volume',
                          f"names {m.get('name')!r}, which is no volume of the pod "
                          f"({', '.join(sorted(volumes))}) nor a volumeClaimTemplate "
                          f"({', '.join(sorted(claims)) or 'none'})")
            env = env_of(c)
            for name, e in env.items():
                ref = (e.get('valueFrom') or {}).get('secretKeyRef')
                if ref:
                    CHECKS.ok(ref.get('name') in secrets and ref.get('key') in secrets[ref.get('name')],
                              where(w, cfield(c, kind, f'env[{name}].valueFrom.secretKeyRef')),
                              f"names the Secret {ref.get('name')} and its key {ref.get('key')}",
                              f"names {ref.get('name')}/{ref.get('key')}, which {EXAMPLE_SECRET} does not "
                              f"define (it has {', '.join(f'{s}/{k}' for s, keys in secrets.items() for k in keys)})")
                fref = (e.get('valueFrom') or {}).get('fieldRef')
                if fref:
                    CHECKS.ok(fref.get('fieldPath') in FIELD_PATHS,
                              where(w, cfield(c, kind, f'env[{name}].valueFrom.fieldRef.fieldPath')),
                              f"is a field of the downward API ({fref.get('fieldPath')})")
            for part in ('command', 'args'):
                if c.get(part):
                    CHECKS.ok(all(isinstance(a, str) for a in c[part]), where(w, cfield(c, kind, part)),
                              'are strings', 'hold a value that is not a string (quote it: Kubernetes refuses it)')
                for arg in c.get(part) or []:
                    for var in VAR_REF.findall(str(arg)):
                        CHECKS.ok(var in env, where(w, cfield(c, kind, part)),
                                  f'$({var}) is an env var of the container',
                                  f"$({var}) in '{arg}' is no env var of the container "
                                  f"(it has {', '.join(sorted(env)) or 'none'}): Kubernetes would pass it as it is")
            home = (env.get('CODEFYUI_HOME') or {}).get('value')
            if kind == 'containers':
                CHECKS.ok(home is not None, where(w, cfield(c, kind, 'env[CODEFYUI_HOME]')), 'is set')
                if home:
                    m = mount_for(c, home)
                    CHECKS.ok(m is not None and m[0] == home.rstrip('/'),
                              where(w, cfield(c, kind, 'env[CODEFYUI_HOME]')),
                              f"{home} is a volume's mount",
                              f"{home} is no volume's mountPath: the home would be in the container's layer")
        for name in sorted(set(volumes) | set(claims)):
            CHECKS.ok(name in mounted, where(w, f'spec.template.spec.volumes[{name}]'),
                      'is mounted by a container', 'is mounted by no container')
        for name, v in volumes.items():
            sec = v.get('secret')
            if sec is None:
                continue
            sname = sec.get('secretName')
            CHECKS.ok(sname in secrets, where(w, f'spec.template.spec.volumes[{name}].secret.secretName'),
                      f'names the Secret {sname}', f"names {sname!r}, which {EXAMPLE_SECRET} does not define")
            for item in sec.get('items') or []:
                CHECKS.ok(item.get('key') in secrets.get(sname, {}),
                          where(w, f"spec.template.spec.volumes[{name}].secret.items[{item.get('key')}]"),
                          f'is a key of {sname}',
                          f"{item.get('key')!r} is not a key of {sname} in {EXAMPLE_SECRET}")
            mode = sec.get('defaultMode', 0o644)
            CHECKS.ok(isinstance(mode, int) and mode & 0o007 == 0,
                      where(w, f'spec.template.spec.volumes[{name}].secret.defaultMode'),
                      f'{oct(mode)} lets no other user read the credential',
                      f'{mode!r} lets other users read the credential')

    CHECKS.ok(len(images) == 1, 'the workloads', f'have one image ({", ".join(map(str, images))})',
              f'have several images: {", ".join(sorted(map(str, images)))}')

    # The server: the StatefulSet, its Services, its ports.
    server = {'ok': False}
    sts = by_kind.get('StatefulSet', [])
    if not CHECKS.ok(len(sts) == 1, 'server.yaml', 'holds one StatefulSet', f'holds {len(sts)} StatefulSets'):
        return objects, secrets, server
    st = sts[0]
    spec = st.get('spec') or {}
    CHECKS.ok(spec.get('replicas') == 1, where(st, 'spec.replicas'),
              'is 1 (the server holds the queue)',
              f"is {spec.get('replicas')!r}: a second replica would be a second server")
    labels = pod_labels(st)
    CHECKS.ok(is_subset((spec.get('selector') or {}).get('matchLabels') or {}, labels),
              where(st, 'spec.selector.matchLabels'), "selects the pod template's labels")
    services = {s['_name']: s for s in by_kind.get('Service', [])}
    headless = services.get(spec.get('serviceName'))
    CHECKS.ok(headless is not None and (headless.get('spec') or {}).get('clusterIP') == 'None',
              where(st, 'spec.serviceName'), f"names the headless Service {spec.get('serviceName')}",
              f"names {spec.get('serviceName')!r}, which is no headless Service (clusterIP: None) of the recipe")
    server_containers = [c for c in (pod_spec(st).get('containers') or [])
                         if (c.get('args') or [None])[0] == 'start']
    if not CHECKS.ok(len(server_containers) == 1, where(st, 'spec.template.spec.containers'),
                     'has one container whose args are `start ...`'):
        return objects, secrets, server
    sc = server_containers[0]
    rc, start_options = cdui_help(cdui, 'start')
    CHECKS.ok(rc == 0 and start_options, f'{cdui} start --help', 'lists its options')
    sargs = parse_args(sc['args'][1:], start_options, st, cfield(sc, 'containers', 'args'))
    CHECKS.ok(sargs.get('--foreground') is True, where(st, cfield(sc, 'containers', 'args')),
              '--foreground (the container\'s process is the server)')
    host = sargs.get('--host', '127.0.0.1')
    CHECKS.ok(host not in ('localhost', '::1') and not host.startswith('127.'),
              where(st, cfield(sc, 'containers', 'args --host')),
              f'{host} is beyond loopback (the agents come from other pods)',
              f'{host} is loopback: no other pod could reach the server')
    ports = {}
    for opt in ('--port', '--zmq-port'):
        value = sargs.get(opt)
        good = isinstance(value, str) and value.isdigit() and 1 <= int(value) <= 65535
        CHECKS.ok(good, where(st, cfield(sc, 'containers', f'args {opt}')), f'is a fixed port ({value})',
                  f'is {value!r}: give a fixed port from 1 to 65535 (the agents are given it once)')
        ports[opt] = int(value) if good else None
    named = {'http': ports['--port'], 'agents': ports['--zmq-port']}
    for pname, number in named.items():
        option = '--port' if pname == 'http' else '--zmq-port'
        CHECKS.ok(resolve_port(sc, pname) == number and number is not None,
                  where(st, cfield(sc, 'containers', f'ports[{pname}].containerPort')),
                  f"is {number}, the server's {option}",
                  f"is {resolve_port(sc, pname)!r}, not the server's {option} {number}")
    for probe in ('readinessProbe', 'livenessProbe'):
        CHECKS.ok(probe in sc, where(st, cfield(sc, 'containers', probe)), 'is set')
    for probe in ('startupProbe', 'readinessProbe', 'livenessProbe'):
        p = sc.get(probe)
        if not p:
            continue
        handler = p.get('tcpSocket') or p.get('httpGet') or {}
        CHECKS.ok(resolve_port(sc, handler.get('port')) in named.values(),
                  where(st, cfield(sc, 'containers', f'{probe}.port')),
                  f"{handler.get('port')} is a port the server listens on",
                  f"{handler.get('port')!r} is no port the server listens on ({named})")
        CHECKS.ok('httpGet' not in p, where(st, cfield(sc, 'containers', probe)),
                  'is not an HTTP request (on 0.0.0.0 every request needs the token: 403)',
                  f'is an httpGet: on {host} every request needs the session token, so it would get 403')
    home = (env_of(sc).get('CODEFYUI_HOME') or {}).get('value', '')
    hm = mount_for(sc, home)
    claims = {(c.get('metadata') or {}).get('name'): c for c in spec.get('volumeClaimTemplates') or []}
    claim = claims.get(hm[1].get('name')) if hm else None
    CHECKS.ok(claim is not None and 'ReadWriteOnce' in ((claim.get('spec') or {}).get('accessModes') or []),
              where(st, cfield(sc, 'containers', 'env[CODEFYUI_HOME]')),
              f'{home} is on a ReadWriteOnce volumeClaimTemplate',
              f'{home} is not on a ReadWriteOnce volumeClaimTemplate: the queue would not outlive the pod')
    CHECKS.ok(home == docker['env'].get('CODEFYUI_HOME'), where(st, cfield(sc, 'containers', 'env[CODEFYUI_HOME]')),
              "is the Dockerfile's CODEFYUI_HOME",
              f"is {home!r}, the Dockerfile's is {docker['env'].get('CODEFYUI_HOME')!r}")

    agent_labels = [pod_labels(o) for o in workloads if o is not st]
    for s in services.values():
        sel = (s.get('spec') or {}).get('selector') or {}
        CHECKS.ok(is_subset(sel, labels), where(s, 'spec.selector'), "selects the server's pod labels",
                  f"{sel} does not select the server's pod labels {labels}")
        CHECKS.ok(not any(is_subset(sel, al) for al in agent_labels), where(s, 'spec.selector'),
                  "selects no agent's pod", f'{sel} selects agents\' pods too')
        sports = {p.get('name'): p for p in (s.get('spec') or {}).get('ports') or []}
        for pname, number in named.items():
            p = sports.get(pname)
            if not CHECKS.ok(p is not None, where(s, f'spec.ports[{pname}]'), 'is set'):
                continue
            CHECKS.ok(p.get('port') == number, where(s, f'spec.ports[{pname}].port'), f'is {number}',
                      f"is {p.get('port')!r}, not the server's {number} "
                      "(the enrollment's command names the server's port)")
            CHECKS.ok(resolve_port(sc, p.get('targetPort', p.get('port'))) == number,
                      where(s, f'spec.ports[{pname}].targetPort'), f'reaches the server\'s port {number}',
                      f"{p.get('targetPort')!r} is not the server's port {number}")
    server.update(ok=True, statefulset=st, container=sc, args=sargs, ports=ports, host=host,
                  services=services, namespace=namespace)

    # The agents.
    section, fleet = fleet_prefix_of_docs(source)
    CHECKS.ok(fleet is not None and is_fleet_prefix(fleet), 'docs/operations.md: ## Kubernetes',
              f"'{fleet}*' is a valid fleet pattern",
              f"'{fleet}*' is no fleet pattern (1 to 63 of [A-Za-z0-9._-], then *)")
    rc, agent_options = cdui_help(cdui, 'agent', 'start')
    CHECKS.ok(rc == 0 and agent_options, f'{cdui} agent start --help', 'lists its options')
    agents = []
    for w in workloads:
        if w is st:
            continue
        containers = [c for c in pod_spec(w).get('containers') or []
                      if (c.get('args') or [])[:2] == ['agent', 'start']]
        if not CHECKS.ok(len(containers) == 1, where(w, 'spec.template.spec.containers'),
                         'has one container whose args are `agent start ...`'):
            continue
        c = containers[0]
        f_args = cfield(c, 'containers', 'args')
        aargs = parse_args(c['args'][2:], agent_options, w, f_args)
        env = env_of(c)
        CHECKS.ok(aargs.get('--foreground') is True, where(w, f_args),
                  "--foreground (the container's process is the agent)")
        one_shot = aargs.get('--one-shot') is True
        if w.get('kind') == 'Job':
            CHECKS.ok(one_shot, where(w, f_args), '--one-shot (a Job\'s pod ends)',
                      'lacks --one-shot: a Job\'s agent would never end')
            CHECKS.ok(pod_spec(w).get('restartPolicy') in ('OnFailure', 'Never'),
                      where(w, 'spec.template.spec.restartPolicy'), 'is OnFailure or Never')
        else:
            CHECKS.ok(not one_shot, where(w, f_args), 'has no --one-shot (a DaemonSet\'s agent stays)',
                      'has --one-shot: the DaemonSet would restart its agent after each run')
            CHECKS.ok(is_subset(((w.get('spec') or {}).get('selector') or {}).get('matchLabels') or {}, pod_labels(w)),
                      where(w, 'spec.selector.matchLabels'), "selects the pod template's labels")
        gpus = ((c.get('resources') or {}).get('limits') or {}).get('nvidia.com/gpu')
        CHECKS.ok(isinstance(gpus, int) and gpus >= 1,
                  where(w, cfield(c, 'containers', 'resources.limits[nvidia.com/gpu]')),
                  f'requests {gpus} card(s)', f'is {gpus!r}: request nvidia.com/gpu')
        # --server names the Service and its agents port.
        endpoint = aargs.get('--server', '')
        m = re.match(r'^tcp://([A-Za-z0-9.-]+):(\d+)$', str(endpoint))
        service = None
        if CHECKS.ok(m is not None, where(w, f_args + ' --server'), f'{endpoint} is tcp://HOST:PORT'):
            labels_ = m.group(1).split('.')
            service = services.get(labels_[0])
            CHECKS.ok(service is not None and (service.get('spec') or {}).get('clusterIP') != 'None',
                      where(w, f_args + ' --server'), f'{labels_[0]} is the Service {labels_[0]}',
                      f"{m.group(1)}: {labels_[0]!r} is no Service of the recipe (it has {', '.join(sorted(services))})"
                      if service is None else f'{labels_[0]} is the headless Service: connect to the ClusterIP one')
            if len(labels_) > 1:
                CHECKS.ok(labels_[1] == namespace, where(w, f_args + ' --server'),
                          f'{m.group(1)} is in the namespace {namespace}',
                          f"{m.group(1)} names the namespace {labels_[1]!r}, the recipe's is {namespace!r}")
                CHECKS.ok(labels_[2:] in ([], ['svc'], ['svc', 'cluster', 'local']), where(w, f_args + ' --server'),
                          f"{m.group(1)} is a Service's name",
                          f'{m.group(1)} is not SERVICE.NAMESPACE.svc[.cluster.local]')
            if service is not None:
                sports = (service.get('spec') or {}).get('ports') or []
                sport = {p.get('name'): p.get('port') for p in sports}.get('agents')
                CHECKS.ok(int(m.group(2)) == sport and sport == ports['--zmq-port'], where(w, f_args + ' --server'),
                          f"port {m.group(2)} is the Service's agents port and the server's --zmq-port",
                          f"port {m.group(2)} is not the Service's agents port ({sport}) and the server's "
                          f"--zmq-port ({ports['--zmq-port']})")
        # --server-key from the Secret.
        key = str(aargs.get('--server-key', ''))
        km = re.fullmatch(r'\$\(([A-Za-z_][A-Za-z0-9_]*)\)', key)
        kref = ((env.get(km.group(1)) or {}).get('valueFrom') or {}).get('secretKeyRef') if km else None
        CHECKS.ok(kref is not None, where(w, f_args + ' --server-key'), f'{key} comes from a secretKeyRef',
                  f'{key!r} is not $(VAR) of an env var from the Secret')
        # --credential: a file the init container copies from the Secret, or the Secret's file.
        cred = str(aargs.get('--credential', ''))
        source_key = credential_source(w, c, cred)
        CHECKS.ok(source_key is not None and source_key[1] == 'credential', where(w, f_args + ' --credential'),
                  f'{cred} is the Secret\'s key credential' + (f' ({source_key[0]})' if source_key else ''),
                  f'{cred} is not the key credential of a Secret the pod mounts'
                  + (f' (it is {source_key})' if source_key else ''))
        # --name: the fleet's prefix and a pod's field.
        name = str(aargs.get('--name', ''))
        nm = re.fullmatch(r'([^$]*)\$\(([A-Za-z_][A-Za-z0-9_]*)\)', name)
        if CHECKS.ok(nm is not None, where(w, f_args + ' --name'), f'{name} is PREFIX$(VAR)'):
            prefix, var = nm.groups()
            CHECKS.ok(is_fleet_prefix(prefix) and fleet is not None and prefix.startswith(fleet),
                      where(w, f_args + ' --name'), f"{prefix} is a prefix of the fleet '{fleet}*'",
                      f"{prefix!r} does not start with the fleet's prefix {fleet!r} that docs/operations.md enrolls")
            fpath = (((env.get(var) or {}).get('valueFrom') or {}).get('fieldRef') or {}).get('fieldPath')
            want = 'metadata.name' if w.get('kind') == 'Job' else 'spec.nodeName'
            CHECKS.ok(fpath == want, where(w, cfield(c, 'containers', f'env[{var}].valueFrom.fieldRef.fieldPath')),
                      f'is {want} (one name per {"pod" if want == "metadata.name" else "node"})',
                      f'is {fpath!r}, not {want}: the agents would share a name')
            if w.get('kind') == 'Job':
                longest = len(prefix) + len(w['_name']) + 6
                CHECKS.ok(longest <= 64, where(w, f_args + ' --name'),
                          f"{prefix}<job name>-xxxxx has {longest} characters, at most 64",
                          f"{prefix}{w['_name']}-xxxxx has {longest} characters, more than a worker name's 64")
            else:
                CHECKS.ok(64 - len(prefix) >= 40, where(w, f_args + ' --name'),
                          f'leaves {64 - len(prefix)} characters for the node\'s name')
        agents.append({'workload': w, 'container': c, 'args': aargs, 'one_shot': one_shot})
    CHECKS.ok({a['workload'].get('kind') for a in agents} == {'DaemonSet', 'Job'}, 'the agents',
              'are a DaemonSet and a Job of one-shot agents')
    server['agents'] = agents
    server['section'] = section
    server['fleet'] = fleet
    return objects, secrets, server


def credential_source(w, c, path):
    """(Secret name, key) that the file `path` of container `c` holds: a secret volume's file, or
    the copy an init container makes of one (`install -m MODE SRC DST` or `cp SRC DST`)."""
    volumes = {v.get('name'): v for v in pod_spec(w).get('volumes') or []}
    m = mount_for(c, path)
    if m is None:
        return None
    volume = volumes.get(m[1].get('name')) or {}
    rel = path[len(m[0]) + 1:]
    if 'secret' in volume:
        return secret_key_at(volume['secret'], rel)
    for init in pod_spec(w).get('initContainers') or []:
        cmd = [str(a) for a in init.get('command') or []] + [str(a) for a in init.get('args') or []]
        if not cmd or cmd[0] not in ('install', 'cp'):
            continue
        files = [a for a in cmd[1:] if a.startswith('/')]
        if len(files) != 2:
            continue
        src, dst = files
        dm = mount_for(init, dst)
        if dm is None or dm[1].get('name') != m[1].get('name') or dst[len(dm[0]) + 1:] != rel:
            continue
        mode = cmd[cmd.index('-m') + 1] if '-m' in cmd and cmd.index('-m') + 1 < len(cmd) else None
        CHECKS.ok(mode is not None and re.fullmatch(r'0?[0-7]{3}', mode) is not None and int(mode, 8) & 0o077 == 0,
                  where(w, cfield(init, 'initContainers', 'command')),
                  f'copies the credential with mode {mode} (the agent warns about a file its group may read)',
                  f'copies the credential with mode {mode!r}: give -m 0400 or 0600 (the agent warns otherwise)')
        sm = mount_for(init, src)
        svol = volumes.get(sm[1].get('name')) if sm else None
        if svol and 'secret' in svol:
            return secret_key_at(svol['secret'], src[len(sm[0]) + 1:])
    return None


def secret_key_at(secret, rel):
    items = secret.get('items')
    if items:
        for item in items:
            if item.get('path') == rel:
                return secret.get('secretName'), item.get('key')
        return None
    return secret.get('secretName'), rel


# ---------------------------------------------------------------------------------------------
# Running what the pods run, on this machine

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('0.0.0.0', 0))
        return s.getsockname()[1]


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith('CODEFYUI_')}
    env['CODEFYUI_SIM_DEVICES'] = ''
    env.update(extra)
    return env


def read(path):
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            return f.read()
    except OSError:
        return ''


class Pod:
    """A pod's volumes as folders of a temporary folder, and its container paths mapped there."""

    def __init__(self, workload, root, secret_values):
        self.w = workload
        self.root = root
        self.dirs = {}
        spec = pod_spec(workload)
        claims = [(c.get('metadata') or {}).get('name')
                  for c in (workload.get('spec') or {}).get('volumeClaimTemplates') or []]
        for name in claims:
            self.make(name, 0o700)
        for v in spec.get('volumes') or []:
            d = self.make(v.get('name'), 0o777)
            sec = v.get('secret')
            if sec is not None:
                values = secret_values.get(sec.get('secretName'), {})
                items = sec.get('items') or [{'key': k, 'path': k} for k in values]
                os.chmod(d, 0o755)
                for item in items:
                    f = os.path.join(d, item['path'])
                    with open(f, 'w', encoding='utf-8') as out:
                        out.write(values.get(item['key'], ''))
                    os.chmod(f, item.get('mode', sec.get('defaultMode', 0o644)))

    def make(self, name, mode):
        d = os.path.join(self.root, name)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, mode)
        self.dirs[name] = d
        return d

    def path(self, container, path):
        m = mount_for(container, path)
        if m is None:
            return path
        # A mount of an undeclared volume (a failure already) gets a folder all the same.
        folder = self.dirs.get(m[1]['name']) or self.make(m[1]['name'], 0o777)
        return os.path.join(folder, path[len(m[0]) + 1:]).rstrip('/')

    def env(self, container, values):
        """The container's env as the kubelet would give it: fields, Secret keys, values (a path
        under a mount mapped to its folder)."""
        env = {}
        for e in container.get('env') or []:
            src = e.get('valueFrom') or {}
            if 'fieldRef' in src:
                env[e['name']] = values.get(src['fieldRef'].get('fieldPath'), 'sample')
            elif 'secretKeyRef' in src:
                ref = src['secretKeyRef']
                env[e['name']] = values['secrets'].get(ref['name'], {}).get(ref['key'], '')
            else:
                value = str(e.get('value', ''))
                env[e['name']] = self.path(container, value) if value.startswith('/') else value
        return env

    def argv(self, container, env, part='args'):
        """command or args with each $(VAR) expanded as the kubelet does, once."""
        return [VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), str(a))
                for a in container.get(part) or []]


def run_doc_enrollment(section, server_home, bin_dir, tmp):
    """Step 3 of docs/operations.md's Kubernetes section, with a stand-in kubectl: `exec POD --
    CMD` runs CMD here on the server's home; `create secret generic NAME --from-literal=K=V ...`
    records the Secret. Returns (the calls kubectl got, the Secret's name, its values)."""
    blocks = re.findall(r'```\n(.*?)```', section, re.S)
    block = next((b for b in blocks if 'create secret generic' in b), None)
    if not CHECKS.ok(block is not None, 'docs/operations.md: ## Kubernetes',
                     'has the block that makes the Secret (kubectl create secret generic)'):
        return [], None, {}
    block = '\n'.join(line[3:] if line.startswith('   ') else line for line in block.splitlines())
    calls = os.path.join(tmp, 'kubectl-calls')
    made = os.path.join(tmp, 'kubectl-secret')
    stand_in = r'''
set -euo pipefail
kubectl() {
  printf '%s\n' "$*" >> "$KUBECTL_CALLS"
  local ns=$2; shift 2
  case "$1" in
    exec) shift 2; [ "$1" = -- ] && shift; "$@" ;;
    create) shift 3; printf 'namespace=%s\nname=%s\n' "$ns" "$1" >> "$KUBECTL_SECRET"; shift
            for a in "$@"; do printf '%s\n' "${a#--from-literal=}" >> "$KUBECTL_SECRET"; done ;;
    *) echo "stand-in kubectl: $1 is not known" >&2; return 1 ;;
  esac
}
'''
    env = clean_env({'CODEFYUI_HOME': server_home, 'KUBECTL_CALLS': calls, 'KUBECTL_SECRET': made,
                     'PATH': bin_dir + ':' + os.environ.get('PATH', '/usr/bin:/bin')})
    out = subprocess.run(['/bin/bash', '-c', stand_in + block], env=env, capture_output=True,
                         text=True, timeout=60)
    CHECKS.ok(out.returncode == 0, 'docs/operations.md: ## Kubernetes, step 3',
              'runs (exit 0) with a stand-in kubectl',
              f'exits {out.returncode}: {out.stderr.strip()}')
    values = {}
    for line in read(made).splitlines():
        k, _, v = line.partition('=')
        values[k] = v
    return read(calls).splitlines(), values.pop('name', None), values


def live_checks(cdui, server, secrets_example):
    tmp = tempfile.mkdtemp(prefix='cdui-k8s-test-')
    procs, logs = [], []
    try:
        st, sc = server['statefulset'], server['container']
        pod = Pod(st, os.path.join(tmp, 'server'), {})
        http, zmq = free_port(), free_port()
        while zmq == http:
            zmq = free_port()
        values = {'metadata.name': st['_name'] + '-0', 'metadata.namespace': server['namespace'],
                  'spec.nodeName': 'node-01', 'status.podIP': '127.0.0.1', 'status.hostIP': '127.0.0.1',
                  'spec.serviceAccountName': 'default', 'secrets': {}}
        env = pod.env(sc, values)
        argv = pod.argv(sc, env)
        swap = {str(server['ports']['--port']): str(http), str(server['ports']['--zmq-port']): str(zmq)}
        for i in range(1, len(argv)):
            if argv[i - 1] in ('--port', '--zmq-port'):
                argv[i] = swap.get(argv[i], argv[i])
        home = env['CODEFYUI_HOME']
        where_ = where(st, 'the server, run here')
        print(f'run   {where_}: cdui {" ".join(argv)} (ports {http} and {zmq} for '
              f"{server['ports']['--port']} and {server['ports']['--zmq-port']})")
        log = open(os.path.join(tmp, 'server.stderr'), 'w')
        logs.append(log)
        proc = subprocess.Popen([cdui, *argv], env=clean_env(env), stdout=log, stderr=subprocess.STDOUT)
        procs.append(proc)

        def listening():
            if proc.poll() is not None:
                raise AssertionError(f'the server exited {proc.returncode}: {read(log.name)}')
            try:
                with socket.create_connection(('127.0.0.1', http), timeout=1):
                    return os.path.isfile(os.path.join(home, 'server.json'))
            except OSError:
                return False
        try:
            eventually(listening, 60, 'the server listens')
        except AssertionError as e:
            CHECKS.ok(False, where_, '', str(e))
            return
        CHECKS.ok(True, where_,
                  "starts with the manifest's args and accepts TCP on its http port (the tcpSocket probes)")
        try:
            urllib.request.urlopen(f'http://127.0.0.1:{http}/api/health', timeout=10)
            status = 200
        except urllib.error.HTTPError as e:
            status = e.code
        CHECKS.ok(status == 403 or server['host'].startswith('127.'), where_,
                  f"GET /api/health without the token answers {status} on --host {server['host']} "
                  '(why the probes are TCP)', f'GET /api/health without the token answers {status}, not 403')

        # Step 3 of the doc: enroll the fleet in the server's pod, make the Secret.
        calls, secret_name, secret = run_doc_enrollment(server['section'], home,
                                                        os.path.dirname(os.path.abspath(cdui)), tmp)
        for call in calls:
            parts = call.split()
            CHECKS.ok(parts[:2] == ['-n', server['namespace']], 'docs/operations.md: step 3',
                      f'kubectl {call.split(" --")[0]}: in the namespace {server["namespace"]}',
                      f"kubectl {call}: not -n {server['namespace']}")
            if len(parts) > 3 and parts[2] == 'exec':
                CHECKS.ok(parts[3] == st['_name'] + '-0', 'docs/operations.md: step 3',
                          f"kubectl exec {parts[3]}: the StatefulSet's pod",
                          f"kubectl exec {parts[3]}: the StatefulSet's pod is {st['_name']}-0")
        keys = set(secret) - {'namespace'}
        CHECKS.ok(secret_name in secrets_example and keys == set(secrets_example.get(secret_name, {})),
                  'docs/operations.md: step 3', f'makes the Secret {secret_name} with the keys of {EXAMPLE_SECRET}',
                  f'makes the Secret {secret_name!r} with the keys {sorted(keys)}, {EXAMPLE_SECRET} has '
                  f'{ {k: sorted(v) for k, v in secrets_example.items()} }')
        public_key = json.loads(read(os.path.join(home, 'server.json')) or '{}').get('zmq_public_key')
        CHECKS.ok(re.fullmatch(r'cdui-wk-[0-9a-f]{64}', secret.get('credential', '')) is not None,
                  'docs/operations.md: step 3', "the Secret's credential is the enrollment's (cdui-wk-...)",
                  f"the Secret's credential is {secret.get('credential')!r}")
        CHECKS.ok(secret.get('server-key') == public_key, 'docs/operations.md: step 3',
                  "the Secret's server-key is the server's public key",
                  f"the Secret's server-key is {secret.get('server-key')!r}, the server's is {public_key!r}")
        secret_values = {secret_name: {k: v for k, v in secret.items() if k != 'namespace'}}

        # Each agent pod: its init containers, then its agent, joining the server.
        token = read(os.path.join(home, 'session.token')).strip()
        joined = {}
        for agent in server['agents']:
            w, c = agent['workload'], agent['container']
            apod = Pod(w, os.path.join(tmp, w['_name']), secret_values)
            pod_name = w['_name'] + ('-x7k2p' if w.get('kind') == 'Job' else '-abcde')
            values = {'metadata.name': pod_name, 'metadata.namespace': server['namespace'],
                      'spec.nodeName': 'gpu-node-01', 'status.podIP': '127.0.0.1',
                      'status.hostIP': '127.0.0.1', 'spec.serviceAccountName': 'default',
                      'secrets': secret_values}
            for init in pod_spec(w).get('initContainers') or []:
                ienv = apod.env(init, values)
                cmd = [apod.path(init, a) if a.startswith('/') else a
                       for a in apod.argv(init, ienv, 'command') + apod.argv(init, ienv, 'args')]
                out = subprocess.run(cmd, env=clean_env(ienv), capture_output=True, text=True, timeout=60)
                CHECKS.ok(out.returncode == 0, where(w, cfield(init, 'initContainers', 'command')),
                          f'runs here (exit 0): {" ".join(cmd)}', f'exits {out.returncode}: {out.stderr.strip()}')
            aenv = apod.env(c, values)
            argv = apod.argv(c, aenv)
            for i in range(1, len(argv)):
                if argv[i - 1] == '--server':
                    argv[i] = f'tcp://127.0.0.1:{zmq}'
                elif argv[i - 1] == '--credential':
                    argv[i] = apod.path(c, argv[i])
            name = argv[argv.index('--name') + 1] if '--name' in argv else '?'
            wh = where(w, 'the agent, run here')
            print(f'run   {wh}: cdui {" ".join(argv)}')
            alog = open(os.path.join(tmp, w['_name'] + '.stderr'), 'w')
            logs.append(alog)
            aproc = subprocess.Popen([cdui, *argv], env=clean_env(aenv), stdout=alog, stderr=subprocess.STDOUT)
            procs.append(aproc)

            def has_joined(log_name=alog.name, p=aproc):
                text = read(log_name)
                if 'joined the server' in text:
                    return text
                if p.poll() is not None:
                    last = ' / '.join(text.strip().splitlines()[-2:])
                    raise AssertionError(f'the agent exited {p.returncode}: {last}')
                return None
            try:
                text = eventually(has_joined, 30, f'agent {name} joins the server')
            except AssertionError as e:
                CHECKS.ok(False, wh, '', str(e))
                continue
            CHECKS.ok(True, wh, f'{name} accepts the manifest\'s args and joins the server with the Secret')
            CHECKS.ok('(CURVE)' in text, wh, 'connects with CURVE (the --server-key from the Secret)')
            CHECKS.ok('can be read by other users' not in text, wh,
                      'reads a credential file no other user may read (no warning)',
                      'warns: ' + next((l for l in text.splitlines() if 'can be read by other users' in l), ''))
            joined[name] = agent['one_shot']
        if joined:
            req = urllib.request.Request(f'http://127.0.0.1:{http}/api/workers',
                                         headers={'X-CodefyUI-Token': token})
            with urllib.request.urlopen(req, timeout=10) as r:
                workers = {x['name']: x for x in json.load(r).get('workers', [])}
            for name, one_shot in joined.items():
                x = workers.get(name, {})
                CHECKS.ok(x.get('credential') == 'enrolled' and x.get('one_shot') == one_shot
                          and x.get('status') == 'online', 'GET /api/workers',
                          f'{name}: online, "credential": "enrolled", "one_shot": {str(one_shot).lower()}',
                          f'{name}: {x or "not listed"}')
    finally:
        for p in reversed(procs):
            stop_process(p)
        for f in logs:
            f.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) != 3:
        print('usage: kubernetes_test.py CDUI_BINARY SOURCE_DIR')
        return 2
    cdui, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    folder = os.path.join(source, RECIPE)
    print(f'The Kubernetes recipe in {folder}: its references, then what its pods run, here '
          '(no cluster).')
    objects, secrets, server = static_checks(cdui, source, folder)
    if server.get('ok') and server.get('agents'):
        try:
            live_checks(cdui, server, secrets)
        except Exception as e:  # a broken manifest may break the run itself: say so, and fail
            CHECKS.ok(False, RECIPE, '', f'running what the pods run failed: {type(e).__name__}: {e}')
    else:
        CHECKS.ok(False, RECIPE, '', 'the server or the agents are missing: nothing to run here')
    print(f'\n{CHECKS.passed} checks passed, {len(CHECKS.failures)} failed')
    for f in CHECKS.failures:
        print(f'FAIL  {f}')
    return 1 if CHECKS.failures else 0


if __name__ == '__main__':
    sys.exit(main())
