// Building the page: elements from data with textContent only, never HTML text, so that a run's
// name or an error sentence can never become markup.

/// An element: `el('td', {class: 'status', dataset: {runId: id}}, 'running', child, ...)`.
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false)
      continue;
    if (key === 'dataset')
      Object.assign(node.dataset, value);
    else if (key === 'onclick')
      node.addEventListener('click', value);
    else if (key === 'onchange')
      node.addEventListener('change', value);
    else
      node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

/// Appends children: nodes as they are, strings and numbers as text, arrays flattened.
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false)
      continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/// Replaces every child of `node`.
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/// A summary's terms and values, for a <dl>: [[label, value], ...], each value's <dd> marked with
/// data-field, its label in lower case.
export function definitions(rows) {
  return rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {dataset: {field: k.toLowerCase()}}, v)]);
}

/// A run's id, linking to its page.
export function runLink(id) {
  return el('a', {href: `#/runs/${encodeURIComponent(id)}`, class: 'id'}, id);
}
