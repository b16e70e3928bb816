from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Submission
from ratings.selectors import queue_summary
from ratings.services import HIDDEN_PERMISSION, QueueError, rating_queue_fill
from tasks.models import TaskPack


class Command(BaseCommand):
    help = "Queue prompt/image pairs of some submissions for expert raters (each item for at least two). Safe to rerun."

    def add_arguments(self, parser):
        parser.add_argument("submissions", nargs="*", type=int, help="submission ids")
        parser.add_argument("--pack", help="instead of ids: every submission of this pack (name or name@version, default latest)")
        parser.add_argument("--raters", required=True, help="comma-separated usernames of expert raters")
        parser.add_argument("--items", type=int, required=True, help="prompt/image pairs to have in the queue (already queued ones count)")
        parser.add_argument("--per-item", type=int, default=2, help="experts per item (at least 2)")
        parser.add_argument("--exemplar-share", type=float, default=0.5, help="share of new tasks whose ratings become exemplars")
        parser.add_argument("--backend", help="take the images of this backend only (default: each prompt's first image)")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, submissions, pack, raters, items, per_item, exemplar_share, backend, seed, **options):
        chosen = self._submissions(submissions, pack)
        names = [n.strip() for n in raters.split(",") if n.strip()]
        users = list(get_user_model().objects.filter(username__in=names))
        unknown = sorted(set(names) - {u.get_username() for u in users})
        if unknown:
            raise CommandError(f"--raters: no user {', '.join(unknown)}")
        try:
            filled = rating_queue_fill(
                submissions=chosen, raters=users, items=items, per_item=per_item, exemplar_share=exemplar_share, backend=backend, seed=seed
            )
        except QueueError as exc:
            raise CommandError(str(exc)) from None
        summary = queue_summary(chosen)
        queued = sum(summary["items"].values())
        self.stdout.write(f"{filled.created} new assignment(s); {queued} item(s) in the queue of {chosen.count()} submission(s)")
        if filled.withheld:
            self.stdout.write(
                self.style.WARNING(
                    f"{filled.withheld} item(s) of hidden (test-split) tasks withheld: {filled.allowed} of these raters may see hidden checklists, "
                    f"{per_item} needed per item (staff grant the permission {HIDDEN_PERMISSION}, e.g. the group 'Hidden-item raters')"
                )
            )
        for pool, n in sorted(summary["items"].items()):
            self.stdout.write(f"  {pool}: {n} item(s), {summary['done'][pool]} of {summary['assignments'][pool]} assignment(s) done")
        if queued < items:
            which = " that these raters may rate" if filled.withheld else ""
            self.stdout.write(
                self.style.WARNING(f"only {queued} of {items} item(s): no more prompts with a rendered image{which} in these submissions")
            )

    def _submissions(self, ids, pack):
        if bool(ids) == bool(pack):
            raise CommandError("give submission ids or --pack (one of the two)")
        if pack:
            name, _, version = pack.partition("@")
            found = TaskPack.objects.filter(name=name, **({"version": version} if version else {})).order_by("-loaded_at").first()
            if found is None:
                raise CommandError(f"--pack: no pack {pack!r}")
            return Submission.objects.filter(pack=found)
        missing = sorted(set(ids) - set(Submission.objects.filter(pk__in=ids).values_list("pk", flat=True)))
        if missing:
            raise CommandError(f"no submission {', '.join(f'#{n}' for n in missing)}")
        return Submission.objects.filter(pk__in=ids)
