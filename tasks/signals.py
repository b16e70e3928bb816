"""What the tasks layer tells the apps above it, which it never imports."""

from django.dispatch import Signal

# Sent by tasks.difficulty when what the boards show of prompt difficulty may have changed, with `texts`: the prompt
# texts the installed predictor has just scored (stored already), or None when a predictor was installed or applied
# (any board may show another one now). A board's release carries its predictions (leaderboard releases it again).
difficulty_changed = Signal()
