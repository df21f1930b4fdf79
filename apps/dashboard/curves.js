// A run's loss and accuracy curves by epoch, with Chart.js (window.Chart, from Debian's
// libjs-chart.js), fed one metric event at a time.

const palette = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

function lineChart(canvas, quantity) {
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
        x: {type: 'linear', title: {display: true, text: 'epoch'}, ticks: {precision: 0}},
        y: {title: {display: true, text: quantity}},
      },
    },
  });
}

/// The two charts of a run's page: every series by epoch of its TrainingLoop nodes, loss and
/// accuracy apart. Metrics by step or batch (`axis` set) are not drawn here.
export class run_curves {
  constructor(lossCanvas, accuracyCanvas) {
    this.available = typeof window.Chart === 'function';
    this.loss = this.available ? lineChart(lossCanvas, 'loss') : null;
    this.accuracy = this.available ? lineChart(accuracyCanvas, 'accuracy') : null;
    this.nodeTypes = new Map();
    this.dirty = new Set();
  }

  /// Reads one event: a node's type from its status, a point from an epoch metric.
  add(event) {
    if (event.type === 'node_status')
      this.nodeTypes.set(event.data.node, event.data.type);
    if (!this.available || event.type !== 'metric' || event.data.axis !== undefined)
      return;
    const {node, name, step, value} = event.data;
    if (this.nodeTypes.get(node) !== 'TrainingLoop' || typeof value !== 'number')
      return;
    const chart = name.includes('accuracy') ? this.accuracy : this.loss;
    const label = `${node} · ${name}`;
    let dataset = chart.data.datasets.find(d => d.label === label);
    if (!dataset) {
      const color = palette[chart.data.datasets.length % palette.length];
      dataset = {label, data: [], borderColor: color, backgroundColor: color, pointRadius: 3};
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

  /// Points drawn so far.
  points() {
    if (!this.available)
      return 0;
    return [this.loss, this.accuracy].reduce(
      (n, c) => n + c.data.datasets.reduce((m, d) => m + d.data.length, 0), 0);
  }

  destroy() {
    if (this.available) {
      this.loss.destroy();
      this.accuracy.destroy();
    }
  }
}
