"""The judge's shared rate budget against a provider that enforces 120 requests and 40,000 tokens per minute.

    .venv/bin/python bench/judge_limits.py [--judgements 78] [--reply-tokens N] [--redis-url redis://127.0.0.1:6379/9]
        [--database postgres|sqlite] [--postgres-url postgres://postgres@127.0.0.1:5432]

The provider (bench/judge_fleet.py) is a scripted OpenAI-compatible server that answers as the scripted judge in
0.5-1.5 s and refuses, with 429 and Retry-After, a request that does not fit 120 requests or 40,000 tokens in the
last 60 s (its tokens: the text counted with the real tokenizer, o200k_base, 3 per message and 3 for the reply's
start, 255 per image, plus the completion it answers, counted the same way). The judges are real worker processes (`manage.py work judge`) on a PostgreSQL database created for the
run (or SQLite), released together on a rendered submission of --judgements judge units. Three configurations,
each on its own submission, in this order:

  baseline   3 workers without a budget: today's behaviour (each process sends as its jobs come; the openai
             client's 2 retries honour Retry-After)
  budget 1   1 worker with ATELIER_JUDGE_RPM=120, ATELIER_JUDGE_TPM=40000
  budget 3   3 workers with the same budget, shared through Redis

The budgeted workers estimate 255 tokens per image (ATELIER_JUDGE_IMAGE_TOKENS: the provider's documented count,
as a deployer would set it) and, per reply, the mean completion tokens per ok judgement of the baseline, as a
deployer reads them from a submission's cost (ATELIER_JUDGE_REPLY_TOKENS; --reply-tokens sets it instead). Printed per configuration:
judgements ok and failed, calls and 429s, the wall from release to the last judgement against the floor the
limits allow (judgements / the binding limit's rate), and each limit's share used once warm: over the whole
60 s windows after the first (which starts empty, so a run bursts through it) before the work ran out.

The judge's requests are long (about 3,400 characters of text), so the tokens bind: about 38 requests a minute,
not 120. --judgements 200 is the issue's size (about 6 minutes per configuration); the default, 78, is the least
that leaves a whole warm window to measure (about 2.3 windows of tokens), and keeps the run near 8 minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from statistics import fmean

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.judge_fleet import Outcome, add_fleet_arguments, budget_use, fleet_for  # noqa: E402

RPM, TPM = 120, 40_000
LATENCY = (0.5, 1.5)
IMAGE_TOKENS = 255


def estimated(requests: list[dict], reply_tokens: int) -> float:
    """The judge's own mean estimate of the provider's requests (evaluator/judge/budget.py)."""
    from evaluator.judge.budget import estimate_tokens

    return fmean(estimate_tokens(json.dumps(r).encode(), image_tokens=IMAGE_TOKENS, reply_tokens=reply_tokens) for r in requests)


def budget_settings(reply_tokens: int) -> dict[str, str]:
    return {
        "ATELIER_JUDGE_RPM": str(RPM),
        "ATELIER_JUDGE_TPM": str(TPM),
        "ATELIER_JUDGE_IMAGE_TOKENS": str(IMAGE_TOKENS),
        "ATELIER_JUDGE_REPLY_TOKENS": str(reply_tokens),
    }


def mean_completion(submission_id: int) -> int:
    """Completion tokens per ok judgement of a submission, rounded up (its cost figures; a 429 answers none)."""
    from django.db.models import Count, Sum

    from evaluation.models import Judgement

    ok = Judgement.objects.filter(submission_id=submission_id, status="ok")
    spent = ok.aggregate(tokens=Sum("completion_tokens"), judged=Count("pk"))
    return math.ceil((spent["tokens"] or 0) / max(1, spent["judged"]))


def report(rows: list[tuple[Outcome, float]]) -> None:
    print(
        f"\nSummary: provider limits {RPM} RPM and {TPM:,} TPM, latency {LATENCY[0]}-{LATENCY[1]} s; the judge's own workers and database"
    )
    head = (
        f"{'configuration':<12}{'workers':>8}{'ok':>6}{'failed':>7}{'calls':>7}{'429s':>6}{'429 %':>7}{'wall s':>8}"
        f"{'floor s':>8}{'wall/floor':>11}{'RPM used':>9}{'TPM used':>9}{'tok/req':>8}{'est/req':>8}"
    )
    print(head)
    for outcome, estimate in rows:
        tokens = fmean(k for _, k in outcome.accepted) if outcome.accepted else 0.0
        floor = 60 * max(outcome.judgements / RPM, outcome.judgements * tokens / TPM)
        used = budget_use(outcome, RPM, TPM)
        shares = {key: f"{used[key]:.0%}" if key in used else "-" for key in ("requests", "tokens")}
        print(
            f"{outcome.name:<12}{outcome.workers:>8}{outcome.statuses.get('ok', 0):>6}{outcome.failed:>7}{outcome.calls:>7}"
            f"{len(outcome.refused):>6}{len(outcome.refused) / max(1, outcome.calls):>7.1%}{outcome.wall:>8.1f}{floor:>8.1f}"
            f"{outcome.wall / floor:>11.2f}{shares['requests']:>9}{shares['tokens']:>9}{tokens:>8.0f}{estimate:>8.0f}"
        )
    spans = ", ".join(f"{o.name} {budget_use(o, RPM, TPM)['windows']:.0f}" for o, _ in rows)
    print(
        "\nfloor: judgements / the binding limit's rate (tokens here); the first window starts empty, so a run may end "
        "up to 60 s under it.\nRPM/TPM used: share of each limit the provider accepted over the whole 60 s windows after "
        f"the first (windows: {spans}; '-': the run ended before one).\n"
        "tok/req: the provider's count per accepted request; est/req: the judge's estimate of the same requests."
    )
    base = rows[0][0]
    for outcome, _ in rows[1:]:
        print(
            f"{outcome.name} against the baseline: 429s {len(outcome.refused)} vs {len(base.refused)}, failed {outcome.failed} vs "
            f"{base.failed}, wall {outcome.wall / base.wall:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgements", type=int, default=78, help="judge units per configuration (rounded up to whole prompts of 6)")
    parser.add_argument(
        "--reply-tokens", type=int, default=None, help="ATELIER_JUDGE_REPLY_TOKENS for the budgeted workers (default: the baseline's mean)"
    )
    add_fleet_arguments(parser)
    args = parser.parse_args()
    with fleet_for(args, "judge-limits-") as fleet:
        rows, reply_tokens = [], args.reply_tokens
        for name, workers in (("baseline", 3), ("budget 1", 1), ("budget 3", 3)):
            env = {} if name == "baseline" else budget_settings(reply_tokens)
            print(f"{name}: {workers} judge worker(s), {'a shared budget ' + json.dumps(env) if env else 'no budget'}", flush=True)
            outcome = fleet.run_configuration(
                name, judgements=args.judgements, workers=workers, env=env, provider={"latency": LATENCY, "rpm": RPM, "tpm": TPM}
            )
            reply_tokens = reply_tokens or mean_completion(outcome.submission_id)
            rows.append((outcome, estimated(fleet.provider.accepted_requests, reply_tokens)))
    report(rows)


if __name__ == "__main__":
    main()
