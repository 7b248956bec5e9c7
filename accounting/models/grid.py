"""Grid carbon intensity per zone-hour (filled in by the grid persistence work)."""
