import logging

import django_rq
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluation.reconcile import reconcile_job
from evaluation.workers import AtelierCronScheduler, run_resilient


class Command(BaseCommand):
    help = "Enqueue evaluation.reconcile every ATELIER_RECONCILE_INTERVAL seconds on the default queue (rq's CronScheduler); run one per deployment."

    def handle(self, *args, **options):
        if not settings.REDIS_URL:
            raise CommandError("REDIS_URL is not set: without Redis there is no queue to reconcile")
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        interval = settings.ATELIER_RECONCILE_INTERVAL

        def start():
            scheduler = AtelierCronScheduler(connection=django_rq.get_connection("default"), name="")
            scheduler.register(reconcile_job, queue_name="default", interval=interval, job_timeout=max(60, interval * 5))
            self.stdout.write(f"reconcile every {interval} s on queue 'default'")
            scheduler.start()

        run_resilient(start, "scheduler")
