/**
 * One request/answer exchange with a kernel: execute a snippet that ends by
 * displaying its answer under a private MIME type, tagged with a nonce, and
 * resolve with that answer. Used for the filesystem probe and for shipping
 * files; the training run itself streams and is handled in kernel.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Kernel, KernelMessage } from '@jupyterlab/services';

/** MIME type of answers to executor calls inside display_data messages. */
export const CALL_MIME = 'application/vnd.autoresearch.kernel-call+json';

/** A call that did not get its answer (the kernel raised, died, or took longer than allowed). */
export class KernelCallError extends Error {
  constructor(
    message: string,
    /** The kernel may be stuck or gone: the caller should not reuse it. */
    readonly kernelLost: boolean,
  ) {
    super(message);
  }
}

/**
 * Runs `code(nonce)` in the kernel and returns the object it displayed under CALL_MIME with that
 * nonce. The code reports its own failures as `{ok: false, error}`; those become KernelCallErrors.
 */
export async function callKernel<T extends object>(
  kernel: Kernel.IKernelConnection,
  code: (nonce: string) => string,
  timeoutMs: number,
): Promise<T> {
  const nonce = randomUUID();
  const future = kernel.requestExecute(
    { code: code(nonce), silent: false, store_history: false, allow_stdin: false, stop_on_error: false },
    true,
  );
  let answer: (T & { ok?: boolean; error?: string }) | undefined;
  let raised: string | undefined;
  future.onIOPub = (msg: KernelMessage.IIOPubMessage) => {
    if (msg.header.msg_type === 'display_data') {
      const data = (msg.content as KernelMessage.IDisplayDataMsg['content']).data[CALL_MIME] as
        (T & { nonce?: string }) | undefined;
      if (data && data.nonce === nonce) answer = data;
    } else if (msg.header.msg_type === 'error') {
      const c = msg.content as KernelMessage.IErrorMsg['content'];
      raised = `${c.ename}: ${c.evalue}`;
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>(resolve => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  try {
    const done = await Promise.race([
      future.done.then(
        () => 'done' as const,
        () => 'lost' as const,
      ),
      timeout,
    ]);
    if (done === 'timeout')
      throw new KernelCallError(`the kernel did not answer within ${Math.round(timeoutMs / 1000)} s`, true);
    if (done === 'lost') throw new KernelCallError('the kernel died or restarted', true);
  } finally {
    clearTimeout(timer);
    future.dispose();
  }
  if (raised) throw new KernelCallError(raised, false);
  if (!answer) throw new KernelCallError('the kernel finished without answering', false);
  if (answer.ok === false) throw new KernelCallError(answer.error ?? 'the kernel reported a failure', false);
  return answer;
}

/** Seconds between re-asks while a new kernel has not answered kernel_info. */
export const KERNEL_INFO_KICK_S = 10;

/**
 * Waits for a new connection's kernel_info reply, reconnecting every few seconds meanwhile.
 * A kernel_info request sent before the kernel's channels are all up can go unanswered (a known
 * race in @jupyterlab/services, likelier through a gateway, which drops the first websocket);
 * each reconnect sends a fresh request, so a lost one costs seconds, not the run.
 */
export async function kernelReady(
  kernel: Kernel.IKernelConnection,
  timeoutS: number,
  kickS = KERNEL_INFO_KICK_S,
): Promise<boolean> {
  const deadline = Date.now() + timeoutS * 1000;
  const answered = kernel.info.then(
    () => true,
    () => false,
  );
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return false;
    if (await Promise.race([answered, wait(Math.min(kickS * 1000, left)).then(() => false)])) return true;
    if (deadline - Date.now() <= 0 || kernel.isDisposed) return false;
    // Not awaited past the deadline: a reconnect that itself hangs must not hold the caller.
    void kernel.reconnect().catch(() => undefined);
  }
}

function wait(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}
