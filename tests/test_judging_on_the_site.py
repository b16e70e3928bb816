"""AtelierJudge wired into the site: cache and rescoring, judge versions side by side, memory, ensembles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from PIL import Image

from evaluation import runtime
from evaluation.models import Exemplar, ExemplarEmbedding, Figure, Judgement, Submission
from evaluation.selectors import submission_cost
from evaluator.judge import PROMPT_DIMENSIONS
from submissions.services import submission_create, submissions_publish, token_create
from tests.openai_server import ProviderUsage

ROOT = Path(__file__).resolve().parent.parent
MEMORY = ROOT / "tests" / "fixtures" / "memory"


def prompt_scores(score: int) -> dict[str, int]:
    return dict.fromkeys(PROMPT_DIMENSIONS, score)


PROMPTS = b'{"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm morning light, no text"}\n{"task_id": "co-s01", "prompt": "Flat seed packet, three orange tomatoes, SUNSET PEAR"}\n'


def submit(team, pack, name="m", data=PROMPTS) -> Submission:
    submission = submission_create(team=team, pack=pack, prompter=name, filename="p.jsonl", data=data)
    submission.refresh_from_db()
    assert submission.status == "done", submission.error
    return submission


def llm_requests(server) -> int:
    return len(server.requests)


@pytest.mark.django_db(transaction=True)
def test_rescoring_an_unchanged_submission_makes_zero_calls(team, sample_pack, scripted_judge, capsys):
    submission = submit(team, sample_pack)
    calls = llm_requests(scripted_judge)
    judgements = Judgement.objects.count()
    assert calls > 0
    call_command("rescore", "--submission", str(submission.pk))
    submission.refresh_from_db()
    assert submission.status == "done"
    assert llm_requests(scripted_judge) == calls and Judgement.objects.count() == judgements
    assert "0 judgement(s) queued" in capsys.readouterr().out
    with pytest.raises(CommandError, match="not finished, not incomplete, or not found: 999"):
        call_command("rescore", "--submission", "999")


@pytest.mark.django_db(transaction=True)
def test_an_identical_prompt_elsewhere_is_judged_from_the_cache(team, sample_pack, scripted_judge):
    first = submit(team, sample_pack, "first")
    calls = llm_requests(scripted_judge)
    second = submit(team, sample_pack, "second")
    assert llm_requests(scripted_judge) == calls  # same prompts, same seeds, same images: every judgement reused
    reused = Judgement.objects.filter(submission=second)
    assert reused.exists() and not reused.filter(cached=False).exists()
    assert sum(reused.values_list("calls", flat=True)) == 0
    assert {s.key: s.value for s in second.figures.all()} == {s.key: s.value for s in first.figures.all()}


# A prompt long enough that its prompt_subjective request passes the provider's 1,024-token floor before it ends.
LONG_PROMPT = "Gouache bread loaves in warm morning light, no text; " + "; ".join(
    f"loaf {n} with a floured, cracked crust" for n in range(40)
)


def one_prompt(text: str) -> bytes:
    return json.dumps({"task_id": "oe-s01", "prompt": text}).encode() + b"\n"


@pytest.mark.django_db(transaction=True)
def test_the_providers_cached_tokens_and_their_cost_show_to_the_team_on_the_page_the_api_and_metrics(
    team, owner, sample_pack, scripted_judge, settings, client
):
    scripted_judge.provider = ProviderUsage()  # the scripted server now counts usage as a provider does
    settings.ATELIER_JUDGE_PRICE_INPUT, settings.ATELIER_JUDGE_PRICE_CACHED_INPUT, settings.ATELIER_JUDGE_PRICE_OUTPUT = 2.0, 0.5, 8.0
    settings.ATELIER_JUDGE_BATCH_DISCOUNT, settings.ATELIER_JUDGE_PRICES_SOURCE = 0.5, "OpenAI pricing page, 2026-12-01"
    submit(team, sample_pack, "first", one_prompt(LONG_PROMPT))
    seen = len(scripted_judge.provider.answered)
    second = submit(team, sample_pack, "second", one_prompt(LONG_PROMPT + "; at dawn"))  # shares the first's long prefix
    reported = scripted_judge.provider.answered[seen:]
    sums = {
        key: sum(row[key] for row in Judgement.objects.filter(submission=second).values(key))
        for key in ("calls", "prompt_tokens", "cached_prompt_tokens", "completion_tokens")
    }
    assert sums == {
        "calls": len(reported),
        "prompt_tokens": sum(a["prompt_tokens"] for a in reported),
        "cached_prompt_tokens": sum(a["prompt_tokens_details"]["cached_tokens"] for a in reported),
        "completion_tokens": sum(a["completion_tokens"] for a in reported),
    }
    assert sums["cached_prompt_tokens"] >= 1024  # at least the prompt_subjective request was served from the cache
    p, c, o = sums["prompt_tokens"], sums["cached_prompt_tokens"], sums["completion_tokens"]
    usd = ((p - c) * 2.0 + c * 0.5 + o * 8.0) / 1_000_000
    # the API record
    record = client.get(f"/api/v1/submissions/{second.pk}", HTTP_AUTHORIZATION=f"Bearer {token_create(team=team, name='ci')[1]}").json()
    cost = record["judge_cost"]
    assert (cost["requests"], cost["prompt_tokens"], cost["cached_prompt_tokens"]) == (sums["calls"], p, c)
    assert cost["usd"] == pytest.approx(usd) and cost["usd_batch"] == pytest.approx(usd / 2) and cost["note"] == ""
    assert cost["prices"]["source"] == "OpenAI pricing page, 2026-12-01" and cost["cached_share"] == pytest.approx(c / p)
    # the page, for the team
    client.force_login(owner)
    page = client.get(f"/submissions/{second.pk}/").content.decode()
    assert f"{p} prompt tokens, {c} of them ({round(100 * c / p)} %) served by the provider's prompt cache" in page
    assert f"{usd:.4f} USD</strong> as sent" in page and f"{usd / 2:.4f} USD on the batch route" in page
    assert "prices: OpenAI pricing page, 2026-12-01" in page
    # /metrics, for the operator: every judgement of the judge so far, and their cost at the prices
    settings.ATELIER_METRICS_TOKEN = "scrape"
    metrics = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape").content.decode()
    every = Judgement.objects.filter(calls__gt=0)
    cached_all = sum(every.values_list("cached_prompt_tokens", flat=True))
    assert f'atelier_judge_cached_prompt_tokens{{judge="openai:scripted-judge"}} {float(cached_all)}' in metrics
    assert 'atelier_judge_cost_usd{judge="openai:scripted-judge",source="OpenAI pricing page, 2026-12-01"}' in metrics
    # published, the page shows no cost to others; without prices it shows tokens only
    submissions_publish(submissions=Submission.objects.filter(pk=second.pk))
    settings.ATELIER_JUDGE_PRICE_INPUT = None
    assert "no prices configured" in client.get(f"/submissions/{second.pk}/").content.decode()
    client.logout()
    public = client.get(f"/submissions/{second.pk}/").content.decode()
    assert 'id="judge-cost"' not in public and f"Judge calls: {submission_cost(second)['calls']} ·" in public


@pytest.mark.django_db(transaction=True)
def test_a_new_judge_rescores_and_both_versions_stay_selectable(team, sample_pack, scripted_judge, settings, client):
    submission = submit(team, sample_pack)
    submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    calls, first = llm_requests(scripted_judge), f"{submission.judge_id}|{submission.judge_version}"
    settings.ATELIER_JUDGE_MODEL = "scripted-judge-2"
    runtime.reset()
    call_command("rescore", "--all")
    submission.refresh_from_db()
    assert submission.status == "done" and submission.judge_id == "openai:scripted-judge-2"
    assert llm_requests(scripted_judge) > calls
    keys = set(Figure.objects.filter(scope="overall").values_list("judge_id", flat=True))
    assert keys == {"openai:scripted-judge", "openai:scripted-judge-2"}
    page = client.get("/").content.decode()
    assert (
        first in page
        and f"{submission.judge_id}|{submission.judge_version}" in page
        and first != f"{submission.judge_id}|{submission.judge_version}"
    )
    old = client.get(f"/submissions/{submission.pk}/", {"judge": first}).content.decode()
    assert "By AtelierJudge via scripted-judge, route ateliereval;" in old


@pytest.mark.django_db(transaction=True)
def test_exemplars_calibrate_rubric_requests_but_never_from_the_same_task(team, sample_pack, scripted_judge, tmp_path):
    rows = [
        {"side": "prompt", "category": "OE", "task_id": "oe-s01", "text": "OWN-TASK EXEMPLAR: bread", "scores": prompt_scores(2)},
        {
            "side": "prompt",
            "category": "OE",
            "task_id": "oe-s02",
            "text": "OTHER-TASK EXEMPLAR: calm shapes",
            "scores": prompt_scores(5),
            "notes": {"instructional_clarity": "precise"},
        },
        {"side": "prompt", "category": "CO", "task_id": "co-s02", "text": "CO EXEMPLAR: a sign", "scores": prompt_scores(3)},
    ]
    path = tmp_path / "exemplars.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    call_command("import_exemplars", str(path))
    call_command("import_exemplars", str(path))  # idempotent
    assert Exemplar.objects.count() == 3 and ExemplarEmbedding.objects.count() == 3
    assert all(len(e.vector) == 384 for e in ExemplarEmbedding.objects.all())
    submit(team, sample_pack, data=b'{"task_id": "oe-s01", "prompt": "Gouache bread in morning light"}')
    bodies = [json.dumps(r) for r in scripted_judge.requests]
    subjective = [b for b in bodies if "instructional_clarity" in b and "OTHER-TASK" in b]
    assert len(subjective) == 1  # the prompt-subjective request, calibrated by the other OE task
    assert not any("OWN-TASK EXEMPLAR" in b for b in bodies)
    assert not any("CO EXEMPLAR" in b for b in bodies)


def test_exemplar_file_errors_name_the_line_and_import_nothing(db, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"side": "prompt", "category": "OE", "text": "x", "scores": {}}\n'
        '{"side": "prompt", "category": "OE", "task_id": "t", "scores": {"clarity": 3}}\n{oops\n'
        '{"side": "prompt", "category": "OE", "task_id": "t", "text": "y", "scores": {"instructional_clarity": 3}}\n'
    )
    with pytest.raises(CommandError) as info:
        call_command("import_exemplars", str(path))
    message = str(info.value)
    assert "bad.jsonl:1: field 'task_id' is required" in message and "bad.jsonl:2:" in message and "clarity" in message
    assert "bad.jsonl:3: invalid JSON" in message and "bad.jsonl:4: field 'scores': missing dimension(s) ['creative_elaboration'" in message
    assert Exemplar.objects.count() == 0


def test_official_memory_files_import_strictly(db):
    with pytest.raises(CommandError, match="memory_oe.json record 0 \\(oe_01\\): field 'task_id': no OE task 'oe_01' in any loaded pack"):
        call_command("import_exemplars", str(MEMORY), "--format", "ateliereval")  # the tasks are not loaded yet
    call_command("load_tasks", str(ROOT / "tests" / "fixtures" / "ateliereval"), "--format", "ateliereval")
    call_command("import_exemplars", str(MEMORY), "--format", "ateliereval", "--pack", "ateliereval")
    assert Exemplar.objects.filter(side="prompt").count() == 4 and Exemplar.objects.filter(side="image").exclude(image="").count() == 2
    with pytest.raises(CommandError, match="nothing imported"):
        call_command("import_exemplars", str(MEMORY / "bad"), "--format", "ateliereval")
    unknown = ROOT / "tests" / "fixtures" / "memory-unknown-task"
    with pytest.raises(CommandError, match="record 0 \\(oe_99\\): field 'task_id': no OE task 'oe_99' in pack ateliereval"):
        call_command("import_exemplars", str(unknown), "--format", "ateliereval", "--pack", "ateliereval")
    assert Exemplar.objects.count() == 6  # nothing of the refused file was stored
    call_command("import_exemplars", str(unknown), "--format", "ateliereval", "--allow-unknown-tasks")
    assert Exemplar.objects.filter(task_id="oe_99").count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_ensemble_averages_two_judges_and_records_agreement(team, sample_pack, scripted_judge, settings):
    settings.ATELIER_JUDGE_MODELS = ["judge-a", "judge-b"]
    runtime.reset()
    submission = submit(team, sample_pack, data=b'{"task_id": "co-s01", "prompt": "Flat seed packet, SUNSET PEAR"}')
    assert submission.judge_id == "ensemble:openai:judge-a+openai:judge-b"
    models = {r["model"] for r in scripted_judge.requests}
    assert models == {"judge-a", "judge-b"}
    llm = Judgement.objects.filter(submission=submission).exclude(skill="target_similarity")
    assert len(scripted_judge.requests) == 2 * llm.count()
    subjective = llm.get(skill="prompt_subjective")
    assert subjective.value == 4.0 and subjective.calls == 2 and subjective.details


@pytest.mark.django_db(transaction=True)
def test_target_similarity_uses_the_reference_render_for_its_scale(team, sample_pack, scripted_judge, capsys):
    call_command("render_targets", "--pack", "sample", "--backend", "smoke-sd-fast", "--candidates", "2", "--references")
    assert "4 c_k reference render(s)" in capsys.readouterr().out  # 2 IM tasks with a target and a seed prompt × 2 backends
    sample_pack.refresh_from_db()
    submit(team, sample_pack, data=b'{"task_id": "im-s01", "prompt": "Red sun over three blue hills, flat poster"}')
    scored = Judgement.objects.filter(skill="target_similarity", status="ok")
    assert scored.count() == 2  # one image on each of the two test backends
    for judgement in scored:
        scores = judgement.scores
        assert scores["scale"] == pytest.approx(100 / scores["reference_raw"])
        assert judgement.value == pytest.approx(min(max(scores["raw"] * scores["scale"], 0), 100))


@pytest.fixture
def tiny_clip(settings):
    """A second CLIP architecture (tiny, random weights) to switch to: open_clip reads its config from the fixtures."""
    import open_clip

    if "atelier-tiny-clip" not in open_clip.list_models():
        open_clip.add_model_config(ROOT / "tests" / "fixtures" / "clip" / "atelier-tiny-clip.json")
    return "atelier-tiny-clip"


def test_exemplar_embeddings_follow_the_clip_model(db, settings, tiny_clip, capsys):
    from evaluation.memory import embedding_model, exemplars_for

    call_command("load_tasks", str(ROOT / "tests" / "fixtures" / "ateliereval"), "--format", "ateliereval")
    call_command("import_exemplars", str(MEMORY), "--format", "ateliereval")
    assert "6 exemplar(s) added, 0 already present; 6 embedding(s) computed" in capsys.readouterr().out
    before = embedding_model("image")
    assert before == "ViT-B-32:random" and ExemplarEmbedding.objects.filter(model=before).count() == 2

    settings.ATELIER_CLIP_MODEL = tiny_clip  # the judge's CLIP changes: the pool for it must not be empty
    query = Image.new("RGB", (24, 16), (20, 120, 140))
    found = exemplars_for(task_id="oe_02", category="OE", side="image", prompt="", image=query)
    assert [e.task_id for e in found] == ["oe_01"]  # embedded on first use with the new model, never the judged task
    vectors = ExemplarEmbedding.objects.filter(model="atelier-tiny-clip:random")
    assert vectors.count() == 2 and all(len(v.vector) == 32 for v in vectors)
    assert ExemplarEmbedding.objects.filter(model=before).count() == 2  # the old model's vectors stay for the old judge

    ExemplarEmbedding.objects.filter(model="atelier-tiny-clip:random").delete()
    call_command("import_exemplars", str(MEMORY), "--format", "ateliereval")  # re-import: nothing new, embeddings refreshed
    assert "0 exemplar(s) added, 6 already present; 2 embedding(s) computed" in capsys.readouterr().out
    call_command("embed_exemplars")
    assert "0 embedding(s) computed; 6 exemplar(s) now embedded with prompt: all-MiniLM-L6-v2" in capsys.readouterr().out
