from django.core.management.base import BaseCommand

from evaluation.reconcile import reconcile


class Command(BaseCommand):
    help = "Re-send the jobs of pending units that have no job behind them (jobs are idempotent: a unit is still done once)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--now", action="store_true", help="no grace age: consider every pending unit (default: ATELIER_RECONCILE_AFTER)"
        )

    def handle(self, *args, now: bool, **options):
        self.stdout.write(str(reconcile(0 if now else None)))
