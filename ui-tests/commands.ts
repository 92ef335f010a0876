/** JupyterLab's commands, run in the page as a user's click or shortcut would run them. */
import type { Page } from '@playwright/test';

/** Runs the command `command` with `args`; what it returns comes back when it is a string (a notification's id), else null. */
export async function execute(page: Page, command: string, args: Record<string, unknown> = {}): Promise<string | null> {
  return page.evaluate(
    async ([id, a]) => {
      const result = await (
        window as unknown as { jupyterapp: { commands: { execute(id: string, a: unknown): Promise<unknown> } } }
      ).jupyterapp.commands.execute(id, a);
      return typeof result === 'string' ? result : null;
    },
    [command, args] as const,
  );
}
