/** The confirmation a resume refused for changed security settings asks for (RunController's confirmSettings). */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

/** Shows the engine's refusal, which names each changed setting; true to resume accepting them. */
export async function confirmChangedSettings(trans: TranslationBundle, message: string): Promise<boolean> {
  const body = new Widget();
  const text = document.createElement('p');
  // The engine's words as text, never markup: a setting's value may come from a file a run wrote.
  text.textContent = message;
  const why = document.createElement('p');
  why.textContent = trans.__(
    'A training run without the sandbox can edit program.md. Resume only if you made these changes yourself.',
  );
  body.node.append(text, why);
  const result = await showDialog({
    title: trans.__('Security settings changed'),
    body,
    buttons: [
      Dialog.cancelButton({ label: trans.__('Cancel') }),
      Dialog.warnButton({ label: trans.__('Resume with these settings') }),
    ],
  });
  return result.button.accept;
}
