from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluator.judge import MemoryFormatError, read_memory_dir
from ratings.memory import exemplars_save
from ratings.services import RatingFileError, exemplars_read_own


class Command(BaseCommand):
    help = "Import human-scored exemplars into the judge's memory: our JSON Lines file, or the official release's memory files."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="own: a .jsonl file; ateliereval: the folder holding the memory files")
        parser.add_argument("--format", choices=["own", "ateliereval"], default="own")
        parser.add_argument("--images", type=Path, help="ateliereval: folder the image paths are relative to")

    def handle(self, *args, path: Path, format: str, images: Path | None, **options):
        try:
            exemplars = read_memory_dir(path, image_root=images) if format == "ateliereval" else exemplars_read_own(path)
        except MemoryFormatError as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        except RatingFileError as exc:
            raise CommandError(f"{path}: {len(exc.problems)} problem(s), nothing imported:\n" + "\n".join(exc.problems)) from None
        new, kept = exemplars_save(exemplars=exemplars, source=f"{format}: {path.name}")
        self.stdout.write(f"{new} exemplar(s) added, {kept} already present")
