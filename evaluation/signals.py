"""What the evaluation layer tells the apps above it, which it never imports."""

from django.dispatch import Signal

# Sent inside the transaction that marks a submission done or incomplete, with `submission` (figures already built).
submission_finished = Signal()
