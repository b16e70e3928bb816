"""What the evaluation layer tells the apps above it, which it never imports."""

from django.dispatch import Signal

# Sent inside the transaction that marks a submission done or incomplete, with `submission` (figures already built).
submission_finished = Signal()

# Sent inside board_stats_rebuild's transaction once a board's statistics are rewritten, with `pack_id` and `revision`.
board_rebuilt = Signal()
