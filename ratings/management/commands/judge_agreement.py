from django.core.management.base import BaseCommand, CommandError

from evaluation.judges import pick_judge
from ratings.agreement import Report, agreement_report, judges_with_ratings, people_report, scripted_section


def fmt(interval) -> str:
    if interval.value is None:
        return "—"
    bounds = f" [{interval.low:.3f}, {interval.high:.3f}]" if interval.low is not None else f" ({interval.note})" if interval.note else ""
    return f"{interval.value:.3f}{bounds}"


class Command(BaseCommand):
    help = (
        "Agreement between experts (Krippendorff alpha, ceiling) and between the judge and stored expert ratings: judge vs each expert "
        "beside expert vs expert, then Spearman, Kendall tau-b, MAE, within-1 against the experts' mean, checklist accuracy/F1. "
        "The demo's scripted raters (rules, not people) follow in a block of their own, never pooled with people's ratings."
    )

    def add_arguments(self, parser):
        parser.add_argument("--judge", help="judge_id|version (default: the one with the most scored submissions)")
        parser.add_argument("--resamples", type=int, default=1000)

    def handle(self, *args, judge: str | None, resamples: int, **options):
        self._people(people_report(resamples=resamples))
        chosen = pick_judge(judges_with_ratings(), judge)
        scripted = scripted_section(judge, resamples=resamples)
        if chosen is None and scripted is None:
            raise CommandError("no expert ratings of judged items: import some with manage.py import_expert_ratings")
        if chosen is not None:
            self._report(agreement_report(chosen, resamples=resamples))
        else:
            self.stdout.write("no people's expert ratings of judged items: import some with manage.py import_expert_ratings")
        if scripted is not None:
            self.stdout.write(f"\nScripted raters (demo) — rules, not people, never pooled with the above: {', '.join(scripted.raters)}")
            self._people(scripted.people, scripted=True)
            if scripted.report is not None:
                self._report(scripted.report)

    def _people(self, rows, scripted: bool = False) -> None:
        one, many = ("scripted", "scripted raters (demo)") if scripted else ("expert", "experts")
        for row in rows:
            self.stdout.write(
                f"{many}, {row.group}: Krippendorff's alpha (ordinal) {fmt(row.alpha)}, {one}-{one} ceiling {fmt(row.ceiling)}; {row.n_items} items rated by >= 2, {row.n_raters} {many}"
            )

    def _report(self, report: Report) -> None:
        one, many = ("scripted", "scripted raters (demo)") if report.scripted else ("expert", "experts")
        self.stdout.write(
            f"{report.judge}: {report.n_ratings} ratings by {report.n_raters} rater(s); {report.unmatched} without a judgement to compare"
        )
        for like in report.like:
            self.stdout.write(
                f"like with like, {like.group}: judge-{one} rho (mean over {many}) {fmt(like.judge_expert)}, {one}-{one} rho (mean over pairs) {fmt(like.expert_expert)}; {like.judge_expert.n_items} units, {like.n_experts} {many}"
            )
        self.stdout.write(
            f"against the {'scripted raters (demo)' if report.scripted else 'experts'}' mean:\n{'dimension':26} {'spearman':>24} {'kendall tau-b':>24} {'MAE':>22} {'within 1':>22}  items tasks"
        )
        for row in report.rows:
            cells = [fmt(row.spearman), fmt(row.kendall_tau_b), fmt(row.mae), fmt(row.within_1)]
            self.stdout.write(
                f"{row.dimension:26} " + " ".join(f"{c:>24}" for c in cells) + f"  {row.spearman.n_items:5} {row.spearman.n_tasks:5}"
            )
        if report.checklist:
            c = report.checklist
            self.stdout.write(
                f"checklist: accuracy {fmt(c.accuracy)}, precision {fmt(c.precision)}, recall {fmt(c.recall)}, F1 {fmt(c.f1)} ({c.accuracy.n_items} labels)"
            )
