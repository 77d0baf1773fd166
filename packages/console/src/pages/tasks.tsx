export function TasksPage() {
  return null;
}
export function TaskPage() {
  return null;
}
