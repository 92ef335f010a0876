/**
 * Every command id the extension registers, in a module that imports nothing: the toolbar, the
 * review view and the plugin name a command by its id without importing the code that adds it
 * (which needs the panel, which holds the toolbar and the review view).
 */

/** Opening a workspace in a panel. */
export const CommandIDs = {
  open: 'autoresearch:open',
  newWorkspace: 'autoresearch:new-workspace',
  openWithKernel: 'autoresearch:open-with-kernel',
} as const;

/** What a panel's run does: the toolbar's buttons and the decisions on a proposal. */
export const RunCommandIDs = {
  start: 'autoresearch:start',
  stop: 'autoresearch:stop',
  resume: 'autoresearch:resume',
  export: 'autoresearch:export',
  selectRun: 'autoresearch:select-run',
  reviewEach: 'autoresearch:review-each',
  approve: 'autoresearch:approve',
  editProposal: 'autoresearch:edit-proposal',
  reject: 'autoresearch:reject',
  approveAll: 'autoresearch:approve-all',
  transfer: 'autoresearch:transfer',
} as const;

/** Moving around a panel's program and experiments. */
export const ViewCommandIDs = {
  editProgram: 'autoresearch:edit-program',
  jumpToBest: 'autoresearch:jump-to-best',
  expandAll: 'autoresearch:expand-all',
  collapseAll: 'autoresearch:collapse-all',
} as const;
