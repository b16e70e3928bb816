"""Judge calls and tokens per submission, and what a second scoring run costs (the cache).

Runs the example submission (examples/demo_prompts.jsonl on the sample pack, the shipped backends)
through AtelierJudge talking to the local scripted OpenAI-compatible server (tests/openai_server.py),
on a throw-away SQLite database, then rescores it:

    .venv/bin/python bench/judge_cost.py

Token counts are the scripted server's fixed 120 + 30 per call; calls and cache hits are real.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    from tests.openai_server import ScriptedOpenAIServer, judge_responder

    workdir = Path(tempfile.mkdtemp(prefix="judge-cost-"))
    with ScriptedOpenAIServer() as server:
        server.default = judge_responder
        os.environ.update(
            DATABASE_URL=f"sqlite:///{workdir / 'db.sqlite3'}",
            MEDIA_ROOT=str(workdir / "media"),
            OPENAI_BASE_URL=server.base_url,
            ATELIER_JUDGE_MODEL="scripted-judge",
            ATELIER_CLIP_PRETRAINED="random",
            DJANGO_SETTINGS_MODULE="atelier.settings",
        )
        os.environ.pop("REDIS_URL", None)
        import django

        django.setup()
        run(server)


def run(server) -> None:
    from django.core.management import call_command

    from evaluation.models import Judgement, Submission
    from evaluation.selectors import submission_cost
    from evaluation.units import submission_rescore
    from submissions.services import submission_create, team_create
    from tasks.loaders import read_own_pack
    from tasks.services import pack_save

    call_command("migrate", verbosity=0)
    pack, _ = pack_save(data=read_own_pack(ROOT / "tasks" / "packs" / "sample"))
    user = __import__("django.contrib.auth", fromlist=["get_user_model"]).get_user_model().objects.create_user("bench")
    team = team_create(user=user, name="bench")
    started = time.perf_counter()
    data = (ROOT / "examples" / "demo_prompts.jsonl").read_bytes()
    submission = submission_create(team=team, pack=pack, prompter="bench", filename="demo_prompts.jsonl", data=data)
    first = time.perf_counter() - started
    submission.refresh_from_db()
    cost = submission_cost(submission)
    judgements = Judgement.objects.filter(submission=submission)
    print(
        f"submission: {submission.entries.count()} prompts, {judgements.count()} judgements "
        f"({judgements.filter(skill='target_similarity').count()} local CLIP scores), status {submission.status}, {first:.1f} s"
    )
    print(
        f"  first scoring : {cost['calls']} calls, {cost['prompt_tokens']} prompt + {cost['completion_tokens']} completion tokens "
        f"({server.requests.__len__()} requests seen by the server)"
    )
    before = len(server.requests)
    started = time.perf_counter()
    submission_rescore(submission.pk)
    print(
        f"  second scoring: {len(server.requests) - before} calls ({time.perf_counter() - started:.2f} s); status {Submission.objects.get(pk=submission.pk).status}"
    )


if __name__ == "__main__":
    main()
