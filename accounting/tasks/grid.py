"""Grid-intensity tasks (filled in by the grid persistence work)."""
