"""Pure functions over plain records: aggregation and statistics. No Django, no torch."""
