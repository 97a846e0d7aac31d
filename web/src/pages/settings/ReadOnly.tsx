/** Says why a section's controls are not offered: the role (or operator right) the API asks for. */
export function ReadOnly({ needs }: { needs: string }) {
  return (
    <p className="alert info" role="note">
      Read-only: needs {needs}.
    </p>
  );
}
