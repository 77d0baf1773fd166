/** The approvals' key root: a decision, or a call that starts waiting, invalidates approvalKeys.all (the navigation's badge too). */
export const approvalKeys = { all: ['approvals'] as const };
