from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from tasks.importers import read_ateliereval
from tasks.loaders import PackError, read_own_pack
from tasks.services import pack_save


class Command(BaseCommand):
    help = "Load a task pack: our own format (tasks/packs/FORMAT.md) or a copy of the official AtelierEval release."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", choices=["own", "ateliereval"], default="own")
        parser.add_argument("--without-checklists", action="store_true", help="ateliereval: load even if the checklist files are absent")
        parser.add_argument(
            "--without-images",
            action="store_true",
            help="ateliereval: load IM tasks without target images (render them with render_targets)",
        )

    def handle(self, *args, path: Path, format: str, without_checklists: bool, without_images: bool, **options):
        try:
            if format == "ateliereval":
                data = read_ateliereval(path, require_checklists=not without_checklists, require_images=not without_images)
            else:
                data = read_own_pack(path)
        except PackError as exc:
            raise CommandError(f"{path}: {len(exc.problems)} problem(s), nothing loaded:\n" + "\n".join(exc.problems)) from None
        pack, counts = pack_save(data=data)
        self.stdout.write(
            f"{pack}: {len(data.tasks)} tasks ({counts['created']} new, {counts['changed']} changed, {counts['unchanged']} unchanged)"
        )
