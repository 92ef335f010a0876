/**
 * A Jupyter server host without git (playwright.config.ts starts a second JupyterLab whose PATH
 * lacks it): JupyterLab says so once, where the user looks, with the fix, and it stays up until
 * dismissed. No run could start there, and without the notice the first sign would be a
 * failed Start.
 */
import { expect, test } from '@jupyterlab/galata';

const NO_GIT = `http://127.0.0.1:${Number(process.env.GALATA_PORT ?? 8898) + 1}`;

test.describe('a host without git', () => {
  test.use({ autoGoto: false });

  test('without git on the server host, a notice says so and how to install it', async ({ page }) => {
    await page.goto(`${NO_GIT}/lab`);
    const notice = page.locator('.Toastify__toast', { hasText: 'git is required on the Jupyter server host' });
    await expect(notice).toBeVisible({ timeout: 30_000 });
    await expect(notice).toContainText('apt-get install git');
    // It waits to be read rather than fading like an ordinary notice.
    await page.waitForTimeout(6000);
    await expect(notice).toBeVisible();
    // The status route says the same, so the notice is the server's word, not the page's guess.
    const status = await (await page.request.get(`${NO_GIT}/autoresearch/status`)).json();
    expect(status.git.ok).toBe(false);
    expect(status.node.ok).toBe(true);
  });
});

test('with git on the host (the main server), no such notice', async ({ page }) => {
  await page.waitForTimeout(3000); // autoGoto has opened the main server's JupyterLab
  await expect(page.locator('.Toastify__toast', { hasText: 'git is required' })).toHaveCount(0);
});
