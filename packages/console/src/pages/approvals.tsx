export function ApprovalsPage() {
  return null;
}
