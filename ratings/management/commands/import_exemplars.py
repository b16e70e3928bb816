from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluator.judge.memory import MemoryFormatError, read_memory_dir
from ratings.services import RatingFileError, exemplar_pool_problems, exemplar_task_problems, exemplars_read_own, exemplars_save
from tasks.models import TaskPack


class Command(BaseCommand):
    help = "Import human-scored exemplars into the judge's memory: our JSON Lines file, or the official release's memory files."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="own: a .jsonl file; ateliereval: the folder holding the memory files")
        parser.add_argument("--format", choices=["own", "ateliereval"], default="own")
        parser.add_argument("--images", type=Path, help="ateliereval: folder the image paths are relative to")
        parser.add_argument("--pack", help="name or name@version: every exemplar's task must be in it (default: in any loaded pack)")
        parser.add_argument(
            "--allow-unknown-tasks",
            action="store_true",
            help="import exemplars whose task is not loaded (they still never calibrate their own task)",
        )

    def handle(self, *args, path: Path, format: str, images: Path | None, pack: str | None, allow_unknown_tasks: bool, **options):
        try:
            exemplars = read_memory_dir(path, image_root=images) if format == "ateliereval" else exemplars_read_own(path)
        except MemoryFormatError as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        except RatingFileError as exc:
            raise CommandError(f"{path}: {len(exc.problems)} problem(s), nothing imported:\n" + "\n".join(exc.problems)) from None
        problems = [] if allow_unknown_tasks else exemplar_task_problems(exemplars, self._pack(pack))
        if problems:
            shown = "\n".join(problems[:20]) + (f"\n… and {len(problems) - 20} more" if len(problems) > 20 else "")
            raise CommandError(
                f"{path}: {len(problems)} exemplar(s) name no loaded task, nothing imported (--allow-unknown-tasks to import them anyway):\n{shown}"
            )
        problems = exemplar_pool_problems(exemplars)
        if problems:
            shown = "\n".join(problems[:20]) + (f"\n… and {len(problems) - 20} more" if len(problems) > 20 else "")
            raise CommandError(f"{path}: {len(problems)} exemplar(s) of evaluation-pool tasks, nothing imported:\n{shown}")
        new, kept, embedded = exemplars_save(exemplars=exemplars, source=f"{format}: {path.name}")
        self.stdout.write(f"{new} exemplar(s) added, {kept} already present; {embedded} embedding(s) computed")

    def _pack(self, pack: str | None) -> TaskPack | None:
        if pack is None:
            return None
        name, _, version = pack.partition("@")
        found = TaskPack.objects.filter(name=name, **({"version": version} if version else {})).order_by("-loaded_at").first()
        if found is None:
            raise CommandError(f"no pack {pack!r}; load it with manage.py load_tasks")
        return found
