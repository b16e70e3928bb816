from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from studies.protocol import ProtocolError
from studies.services import StudyError, invitations_create, study_create
from tasks.models import TaskPack


class Command(BaseCommand):
    help = "Create a human study on a pack with the shipped protocol (edit it in the admin) and print invitation links."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--pack", required=True, help="pack name, or name@version (default: latest version)")
        parser.add_argument("--split", choices=["dev", "test", ""], default="", help="only tasks of this split ('' = both)")
        parser.add_argument("--per-category", type=int, default=5, help="tasks of each module per round (AtelierEval: 5)")
        parser.add_argument("--rounds", type=int, default=2, help="rounds (AtelierEval: 2)")
        parser.add_argument("--retry-attempts", type=int, default=0, help="IM retry mode: attempts per IM task (0 = off)")
        parser.add_argument("--retry-backend", default="", help="the fast backend that renders IM attempts")
        parser.add_argument("--invitations", type=int, default=5, help="links to create now")
        parser.add_argument("--valid-days", type=int, default=None)
        parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="printed before each link's path")

    def handle(
        self, *args, name, pack, split, per_category, rounds, retry_attempts, retry_backend, invitations, valid_days, base_url, **options
    ):
        pack_name, _, version = pack.partition("@")
        found = TaskPack.objects.filter(name=pack_name, **({"version": version} if version else {})).order_by("-loaded_at").first()
        if found is None:
            raise CommandError(f"--pack: no pack {pack!r}; load one with manage.py load_tasks")
        try:
            study = study_create(
                name=name,
                pack=found,
                split=split,
                per_category=per_category,
                rounds=rounds,
                retry_attempts=retry_attempts,
                retry_backend=retry_backend,
            )
            links = invitations_create(study=study, count=invitations, valid_days=valid_days) if invitations else []
        except (StudyError, ProtocolError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Study {study.name!r} ({study.slug}) on {found}: {study.tasks_per_participant} tasks per participant, protocol {study.protocol_version}."
        )
        for link in links:
            self.stdout.write("  " + base_url.rstrip("/") + reverse("study-session", args=[link.token]))
        self.stdout.write(f"Staff page: {base_url.rstrip('/')}{reverse('study-staff', args=[study.slug])}")
