from django.core.management.base import BaseCommand, CommandError

from evaluation import runtime
from tasks.models import TaskPack
from tasks.services import PackRevision
from tasks.targets import references_render, targets_render


class Command(BaseCommand):
    help = "Render IM target images from their seed prompts, keeping the most representative of several candidates."

    def add_arguments(self, parser):
        parser.add_argument("--pack", required=True, help="pack name or name@version (default: latest version)")
        parser.add_argument("--backend", required=True, help="an enabled backend from the backends file")
        parser.add_argument("--candidates", type=int, default=4, help="renders per target to choose from (ArtWhisperer used 10)")
        parser.add_argument("--force", action="store_true", help="re-render targets that already exist")
        parser.add_argument(
            "--references",
            action="store_true",
            help="also render each seed prompt once on every enabled backend: the c_k reference that scales target similarity",
        )

    def handle(self, *args, pack: str, backend: str, candidates: int, force: bool, references: bool, **options):
        configs = runtime.backend_configs()
        if backend not in configs:
            raise CommandError(f"backend {backend!r} is not enabled; enabled: {', '.join(configs) or 'none'}")
        if candidates < 1:
            raise CommandError("--candidates must be at least 1")
        name, _, version = pack.partition("@")
        found = TaskPack.objects.filter(name=name, **({"version": version} if version else {})).order_by("-loaded_at").first()
        if found is None:
            raise CommandError(f"no pack {pack!r}; load it with manage.py load_tasks")
        revision = PackRevision.begin(found.pk)  # the whole run is one revision, raised only if it changes what is judged
        done, failures = targets_render(pack=found, backend=configs[backend], candidates=candidates, force=force, revision=revision)
        self.stdout.write(f"{found}: {done} target(s) rendered on {backend}")
        if references:
            count = references_render(pack=found, backends=list(configs.values()), revision=revision)
            self.stdout.write(f"{count} c_k reference render(s) made on {', '.join(configs)}")
        found.refresh_from_db()
        self.stdout.write(f"pack revision {revision.base} -> {found.revision}")
        if failures:
            raise CommandError(f"{len(failures)} target(s) failed:\n" + "\n".join(failures))
