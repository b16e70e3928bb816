from django.core.management.base import BaseCommand, CommandError

from evaluator.prompters.baselines import BASELINES
from submissions.baselines import baseline_create
from tasks.models import TaskPack


class Command(BaseCommand):
    help = "Create (and evaluate) a reference baseline submission for a pack, e.g. brief-verbatim."

    def add_arguments(self, parser):
        parser.add_argument("--pack", required=True, help="pack name, or name@version (default: latest version)")
        parser.add_argument("--baseline", choices=sorted(BASELINES), default="brief-verbatim")
        parser.add_argument("--publish", action="store_true", help="publish it once it is done")

    def handle(self, *args, pack: str, baseline: str, publish: bool, **options):
        name, _, version = pack.partition("@")
        found = TaskPack.objects.filter(name=name, **({"version": version} if version else {})).order_by("-loaded_at").first()
        if found is None:
            raise CommandError(f"no pack {pack!r}; load one with manage.py load_tasks")
        submission = baseline_create(pack=found, baseline=baseline, publish=publish)
        self.stdout.write(f"baseline {baseline} on {found}: submission #{submission.pk} ({submission.status})")
