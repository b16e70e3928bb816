"""What the evaluation layer tells the apps above it, which it never imports."""

from django.dispatch import Signal

# Sent inside the transaction that marks a submission done or incomplete, with `submission` (figures already built).
submission_finished = Signal()

# Sent when submission_fail marks a submission failed, with `submission_id` (also when it was already failed: a retried
# job sends it again, so a receiver keys what it does by the submission).
submission_failed = Signal()

# Sent by the apps that publish (submissions' services: staff's Publish, a team's board selection) inside the
# publishing transaction, with `submission_id`, for each submission that call published: peers above this layer learn
# it without importing each other's services.
submission_published = Signal()

# Sent inside board_stats_rebuild's transaction once a board's statistics are rewritten, with `pack_id` and `revision`.
board_rebuilt = Signal()

# Sent when what a board shows besides its statistics is rewritten (studies rebuilds its human baseline rows), inside
# that transaction, with `pack_id` and `revision`: a board's release carries it too (leaderboard releases the board).
board_changed = Signal()
