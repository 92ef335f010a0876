/**
 * One row of a dialog's form (New Autoresearch Workspace, Transfer study): the word, the control
 * and an optional hint, all inside one label, so a click on the word reaches the control and a
 * screen reader names the control by it.
 */
export function dialogRow(className: string, label: string, control: HTMLElement, hint = ''): HTMLLabelElement {
  const wrap = document.createElement('label');
  wrap.className = className;
  const text = document.createElement('span');
  text.textContent = label;
  wrap.append(text, control);
  if (hint) {
    const small = document.createElement('small');
    small.textContent = hint;
    wrap.appendChild(small);
  }
  return wrap;
}
