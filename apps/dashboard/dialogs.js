// Modal dialogs (<dialog>): the second question before an action that cannot be undone, and a
// command to copy that the server shows once (an enrollment's, a re-key's).
import {el, replace} from './dom.js';

/// A dialog in `parent`, built once per view; its content is replaced each time it opens.
export class modal {
  constructor(parent, id) {
    this.box = el('dialog', {id, class: 'modal'});
    parent.append(this.box);
  }

  /// Shows `children`; resolves with the value of the button that closed it ('' for Escape).
  open(...children) {
    replace(this.box, children);
    this.box.returnValue = '';
    this.box.showModal();
    return new Promise(resolve => this.box.addEventListener('close', () => resolve(this.box.returnValue),
                                                            {once: true}));
  }

  close(value = '') {
    if (this.box.open)
      this.box.close(value);
  }
}

/// A button that closes `dialog` with `value`.
export function closer(dialog, value, label, attributes = {}) {
  return el('button', {type: 'button', ...attributes, onclick: () => dialog.close(value)}, label);
}

/// Asks `question`, saying `consequence`: true when the person confirms with `yes`.
export async function confirm(dialog, question, consequence, yes) {
  const answer = await dialog.open(el('h2', {}, question), el('p', {class: 'consequence'}, consequence),
                                   el('div', {class: 'dialog-buttons'},
                                      closer(dialog, 'yes', yes, {class: 'danger', dataset: {answer: 'yes'}}),
                                      closer(dialog, 'no', 'Keep it', {dataset: {answer: 'no'}})));
  return answer === 'yes';
}

/// The command an enrollment or a re-key answers, with its warning, shown once.
export function commandView(answer) {
  return [el('p', {}, `Run this on the machine of worker ${answer.name}, in the folder that is to keep its `
                      + `credential file (${answer.credential_file}). It writes the credential, which is `
                      + 'shown only now, and starts the agent:'),
          el('pre', {class: 'command', id: 'enroll-command'}, answer.command),
          answer.warning ? el('p', {class: 'warning', id: 'enroll-warning'}, answer.warning) : null];
}
