export function RunsPage() {
  return null;
}
export function RunPage() {
  return null;
}
