import logging

import django_rq
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluation.queues import DEFAULT_QUEUE
from evaluation.reconcile import reconcile_job
from evaluation.workers import AtelierCronScheduler, run_resilient


class Command(BaseCommand):
    # No system checks: they import the URLconf and with it every view (scipy included), seconds of a worker's start
    # for checks about the web process, which runs them itself (and `manage.py check --deploy` before a deploy).
    requires_system_checks = []
    help = f"Enqueue evaluation.reconcile every ATELIER_RECONCILE_INTERVAL seconds on the {DEFAULT_QUEUE} queue (rq's CronScheduler); run one per deployment."

    def handle(self, *args, **options):
        if not settings.REDIS_URL:
            raise CommandError("REDIS_URL is not set: without Redis there is no queue to reconcile")
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        interval = settings.ATELIER_RECONCILE_INTERVAL

        def start():
            scheduler = AtelierCronScheduler(connection=django_rq.get_connection(DEFAULT_QUEUE), name="")
            scheduler.register(reconcile_job, queue_name=DEFAULT_QUEUE, interval=interval, job_timeout=max(60, interval * 5))
            self.stdout.write(f"reconcile every {interval} s on queue {DEFAULT_QUEUE!r}")
            scheduler.start()

        run_resilient(start, "scheduler")
