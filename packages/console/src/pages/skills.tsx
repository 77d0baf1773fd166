export function SkillsPage() {
  return null;
}
