from django.core.management.base import BaseCommand, CommandError

from evaluation.judges import pick_judge
from ratings.agreement import agreement_report, judges_with_ratings, people_report


def fmt(interval) -> str:
    if interval.value is None:
        return "—"
    bounds = f" [{interval.low:.3f}, {interval.high:.3f}]" if interval.low is not None else f" ({interval.note})" if interval.note else ""
    return f"{interval.value:.3f}{bounds}"


class Command(BaseCommand):
    help = "Agreement between experts (Krippendorff alpha, ceiling) and between the judge and stored expert ratings: judge vs each expert beside expert vs expert, then Spearman, Kendall tau-b, MAE, within-1 against the experts' mean, checklist accuracy/F1."

    def add_arguments(self, parser):
        parser.add_argument("--judge", help="judge_id|version (default: the one with the most scored submissions)")
        parser.add_argument("--resamples", type=int, default=1000)

    def handle(self, *args, judge: str | None, resamples: int, **options):
        for row in people_report(resamples=resamples):
            self.stdout.write(
                f"experts, {row.group}: Krippendorff's alpha (ordinal) {fmt(row.alpha)}, expert-expert ceiling {fmt(row.ceiling)}; {row.n_items} items rated by >= 2, {row.n_raters} experts"
            )
        chosen = pick_judge(judges_with_ratings(), judge)
        if chosen is None:
            raise CommandError("no expert ratings of judged items: import some with manage.py import_expert_ratings")
        report = agreement_report(chosen, resamples=resamples)
        self.stdout.write(
            f"{chosen}: {report.n_ratings} ratings by {report.n_raters} rater(s); {report.unmatched} without a judgement to compare"
        )
        for like in report.like:
            self.stdout.write(
                f"like with like, {like.group}: judge-expert rho (mean over experts) {fmt(like.judge_expert)}, expert-expert rho (mean over pairs) {fmt(like.expert_expert)}; {like.judge_expert.n_items} units, {like.n_experts} experts"
            )
        self.stdout.write(
            f"against the experts' mean:\n{'dimension':26} {'spearman':>24} {'kendall tau-b':>24} {'MAE':>22} {'within 1':>22}  items tasks"
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
