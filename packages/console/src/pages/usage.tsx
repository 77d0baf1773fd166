export function UsagePage() {
  return null;
}
