/**
 * kernelReady: a kernel_info reply that never comes (lost before the kernel's channels were up)
 * is asked for again by reconnecting. The connection here is a stand-in with only the two members
 * kernelReady uses, so the lost reply can be made to happen every time; the real connections are
 * exercised by the kernel and gateway tests.
 */
import { PromiseDelegate } from '@lumino/coreutils';
import { describe, expect, it } from 'vitest';
import type { Kernel } from '@jupyterlab/services';
import { kernelReady } from '../src/engine/executor/kernel-call';

/** A connection whose kernel_info is answered only after `answerAfter` reconnects. */
function connection(answerAfter: number): { kernel: Kernel.IKernelConnection; reconnects: () => number } {
  const info = new PromiseDelegate<KernelInfo>();
  let reconnects = 0;
  const kernel = {
    isDisposed: false,
    info: info.promise,
    reconnect: async () => {
      reconnects += 1;
      if (reconnects >= answerAfter) info.resolve({} as KernelInfo);
    },
  } as unknown as Kernel.IKernelConnection;
  return { kernel, reconnects: () => reconnects };
}
type KernelInfo = Awaited<Kernel.IKernelConnection['info']>;

describe('kernelReady', () => {
  it('answers at once when the reply comes', async () => {
    const c = connection(0);
    await c.kernel.reconnect();
    expect(await kernelReady(c.kernel, 5, 0.05)).toBe(true);
    expect(c.reconnects()).toBe(1);
  });

  it('reconnects while the reply is missing, and goes on once one comes', async () => {
    const c = connection(3);
    expect(await kernelReady(c.kernel, 5, 0.05)).toBe(true);
    expect(c.reconnects()).toBe(3);
  });

  it('gives up at the deadline', async () => {
    const c = connection(Infinity);
    const t = Date.now();
    expect(await kernelReady(c.kernel, 0.3, 0.05)).toBe(false);
    expect(Date.now() - t).toBeLessThan(2000);
    expect(c.reconnects()).toBeGreaterThanOrEqual(3);
  });
});
