"""Episode runner, batch evaluation across seeds, metrics and reports."""
