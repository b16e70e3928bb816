import logging

import django_rq
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluation.queues import queue_names_help
from evaluation.workers import AtelierWorker, run_resilient


class Command(BaseCommand):
    # No system checks: they import the URLconf and with it every view (scipy included), seconds of a worker's start
    # for checks about the web process, which runs them itself (and `manage.py check --deploy` before a deploy).
    requires_system_checks = []
    help = f"Run a worker on the given queues ({queue_names_help()}): a SimpleWorker that heartbeats while it works and restarts when Redis comes back."

    def add_arguments(self, parser):
        parser.add_argument("queues", nargs="+", help=f"queue names; configured: {', '.join(settings.ATELIER_QUEUES)}")
        parser.add_argument("--burst", action="store_true", help="stop when the queues are empty")

    def handle(self, *args, queues: list[str], burst: bool, **options):
        unknown = [q for q in queues if q not in settings.ATELIER_QUEUES]
        if unknown:
            raise CommandError(f"unknown queue(s) {', '.join(unknown)}; configured: {', '.join(settings.ATELIER_QUEUES)}")
        if not settings.REDIS_URL:
            raise CommandError("REDIS_URL is not set: without Redis, jobs run in the web process and no worker is needed")
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

        def start():
            worker = AtelierWorker([django_rq.get_queue(q) for q in queues], connection=django_rq.get_connection(queues[0]))
            worker.work(burst=burst, with_scheduler=False)

        run_resilient(start, f"worker on {', '.join(queues)}")
