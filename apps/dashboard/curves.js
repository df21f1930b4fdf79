// A run's loss and accuracy curves by epoch, and its losses by optimizer step and by validation
// batch, with Chart.js (window.Chart, from Debian's libjs-chart.js), fed one metric event at a time.

export const palette = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

/// A line chart of `quantity` by `axis`, its series added as datasets of {x, y} points.
export function lineChart(canvas, quantity, axis = 'epoch') {
  return new window.Chart(canvas, {
    type: 'line',
    data: {datasets: []},
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: false,
      // A run of many epochs: draw at most 500 points a series (the data keeps every one).
      plugins: {decimation: {enabled: true, algorithm: 'lttb', samples: 500}},
      scales: {
        x: {type: 'linear', title: {display: true, text: axis}, ticks: {precision: 0}},
        y: {title: {display: true, text: quantity}},
      },
    },
  });
}

/// The charts of a run's page: every series by epoch of its TrainingLoop nodes, loss and accuracy
/// apart; the series by optimizer step (`axis` "step": train_loss_batch) and by validation batch
/// (`axis` "batch": val_loss_step), one point a step, apart again.
export class run_curves {
  constructor({loss, accuracy, step, batch}) {
    this.available = typeof window.Chart === 'function';
    this.loss = this.available ? lineChart(loss, 'loss') : null;
    this.accuracy = this.available ? lineChart(accuracy, 'accuracy') : null;
    this.byAxis = this.available ? {step: lineChart(step, 'loss', 'optimizer step'),
                                    batch: lineChart(batch, 'loss', 'validation batch')} : {};
    this.nodeTypes = new Map();
    this.dirty = new Set();
  }

  /// Reads one event: a node's type from its status, a point from an epoch metric.
  add(event) {
    if (event.type === 'node_status')
      this.nodeTypes.set(event.data.node, event.data.type);
    if (!this.available || event.type !== 'metric')
      return;
    const {node, name, step, value, axis} = event.data;
    if (this.nodeTypes.get(node) !== 'TrainingLoop' || typeof value !== 'number')
      return;
    const chart = axis !== undefined ? this.byAxis[axis] : name.includes('accuracy') ? this.accuracy : this.loss;
    if (!chart)
      return;
    const label = `${node} · ${name}`;
    let dataset = chart.data.datasets.find(d => d.label === label);
    if (!dataset) {
      const color = palette[chart.data.datasets.length % palette.length];
      dataset = {label, data: [], borderColor: color, backgroundColor: color, pointRadius: axis === undefined ? 3 : 0};
      chart.data.datasets.push(dataset);
    }
    dataset.data.push({x: step, y: value});
    this.dirty.add(chart);
  }

  /// Draws what add() brought since the last call.
  draw() {
    for (const chart of this.dirty)
      chart.update('none');
    this.dirty.clear();
  }

  /// Points by epoch drawn so far.
  points() {
    return this.available ? count([this.loss, this.accuracy]) : 0;
  }

  /// Points by step or batch drawn so far.
  stepPoints() {
    return this.available ? count(Object.values(this.byAxis)) : 0;
  }

  destroy() {
    if (this.available)
      for (const chart of [this.loss, this.accuracy, ...Object.values(this.byAxis)])
        chart.destroy();
  }
}

function count(charts) {
  return charts.reduce((n, c) => n + c.data.datasets.reduce((m, d) => m + d.data.length, 0), 0);
}
