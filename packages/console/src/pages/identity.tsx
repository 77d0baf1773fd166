export function IdentityPage() {
  return null;
}
