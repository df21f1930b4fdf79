// How the page writes times, sizes and a run's fields, in the words `cdui runs` uses.

/// "1.2 s", "3 min 4 s", "2 h 5 min".
export function duration(ms) {
  if (ms === null || ms === undefined || ms < 0)
    return '—';
  const s = ms / 1000;
  if (s < 60)
    return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60)
    return `${m} min ${Math.floor(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/// Bytes as GiB or MiB, as cdui prints them.
export function bytes(n) {
  if (typeof n !== 'number')
    return '—';
  const gib = n / 2 ** 30;
  if (gib >= 1)
    return `${gib.toFixed(1)} GiB`;
  return `${(n / 2 ** 20).toFixed(1)} MiB`;
}

/// A local clock time, "14:03:27".
export function clock(ms) {
  return new Date(ms).toLocaleTimeString([], {hour12: false});
}

/// A number as the tables show it: up to 4 significant digits.
export function number(v) {
  if (typeof v !== 'number')
    return typeof v === 'string' ? v : JSON.stringify(v);
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4)));
}

/// Where the run executes: this server, a worker, or a pool.
export function target(run) {
  const t = (run.options && run.options.target) || {};
  if (t.pool)
    return `pool:${t.pool}`;
  return t.worker || 'local';
}

function kindOf(device) {
  return String(device).split('/').pop().split(':')[0];
}

/// The run's devices: its device set, else the device whose queue it is in, and what was asked
/// when the device fell back ("cpu (asked cuda)").
export function devices(run) {
  const t = (run.options && run.options.target) || {};
  const shown = Array.isArray(t.devices) && t.devices.length > 0 ? t.devices.join(', ') : run.queue_key;
  const asked = run.device_requested;
  if (typeof asked === 'string' && asked !== 'auto' && kindOf(asked) !== kindOf(run.queue_key))
    return `${shown} (asked ${asked})`;
  return shown;
}

/// The memory budget per card and where it came from: "0.8 GiB (measured)".
export function budget(run) {
  const t = (run.options && run.options.target) || {};
  if (typeof t.memory_gib !== 'number')
    return '—';
  return `${number(t.memory_gib)} GiB (${t.memory_source || 'typed'})`;
}

/// A progress event's place: "epoch 3/20, batch 41/63".
export function place(progress) {
  return `epoch ${progress.epoch}/${progress.epochs}, batch ${progress.batch}/${progress.batches}`;
}

/// How long the run has waited, run or ran.
export function runDuration(run, now = Date.now()) {
  if (run.started_ms)
    return duration((run.finished_ms || now) - run.started_ms);
  if (run.status === 'queued')
    return `waiting ${duration(now - run.created_ms)}`;
  return '—';
}
