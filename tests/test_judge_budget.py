"""One rate budget for the judge across worker processes (evaluator/judge/budget.py), through real Redis, real
processes and real HTTP to the scripted OpenAI-compatible server.

The processes run the real judge (OpenAIJudge.run through the openai client), each building its own judge and budget;
the budget's window is shortened to WINDOW seconds in them (budget.WINDOW) so a test sees several windows in a few
seconds.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import threading
import time
from typing import Any

import pytest

from evaluator.judge import budget, tokens
from evaluator.judge.budget import JudgeBudget, estimate_tokens, retry_after, shared_budget
from evaluator.judge.config import JudgeConfig, JudgeConfigError
from evaluator.judge.openai_judge import OpenAIJudge
from evaluator.judge.pricing import Prices, Usage, cost_record, prices_from_environ, prices_from_settings
from evaluator.judge.types import TaskInput
from tests.openai_server import Reply, ScriptedOpenAIServer, judge_responder, request_text

WINDOW = 2  # seconds, in the worker processes
TASK = TaskInput("oe-budget", "OE", "Budget", "A fox in the snow.", {}, ("names a fox", "says snow"), ("a fox",))


def _config(base_url: str, **budget_settings: Any) -> JudgeConfig:
    return JudgeConfig(base_url=base_url, model="m", clip_pretrained="random", timeout=10, **budget_settings)


def _judge_for(name: str, base_url: str, settings: dict[str, Any], seconds: float, ready: Any, start: Any, done: Any) -> None:
    """A worker process: the real judge, judging a prompt again and again for `seconds` once every worker is ready."""
    budget.WINDOW = WINDOW
    judge = OpenAIJudge(_config(base_url, **settings))
    budget.tokens.encoding()  # the tables the budget counts with load on first use: not inside the timed windows
    ready.put(name)
    start.wait(timeout=60)
    stop_at, ok = time.time() + seconds, 0
    while time.time() < stop_at:
        ok += judge.run("prompt_objective", TASK, f"{name}: a red fox in deep snow").status == "ok"
    done.put((name, ok))


class Arrivals:
    """The server's side: when each request arrived and from which worker (named in the prompt)."""

    def __init__(self, reply_delay: float = 0.0) -> None:
        self.seen: list[tuple[float, str]] = []
        self.lock, self.reply_delay = threading.Lock(), reply_delay

    def __call__(self, request: dict[str, Any]) -> Reply:
        name = next((w for w in request_text(request).split() if w.startswith("worker-")), "?").rstrip(":")
        with self.lock:
            self.seen.append((time.time(), name))
            number = len(self.seen)
        return self.answer(request, number)

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        reply = judge_responder(request)
        reply.delay = self.reply_delay
        return reply


def _run_workers(server: ScriptedOpenAIServer, names: list[str], settings: dict[str, Any], seconds: float) -> dict[str, int]:
    """Run one judge worker process per name for `seconds`, all starting together; {name: judgements ok}."""
    context = multiprocessing.get_context("fork")  # real processes, without each importing the openai client again
    ready, start, done = context.Queue(), context.Event(), context.Queue()
    processes = [context.Process(target=_judge_for, args=(name, server.base_url, settings, seconds, ready, start, done)) for name in names]
    for process in processes:
        process.start()
    try:
        for _ in processes:
            ready.get(timeout=60)  # each has imported and built its judge
        start.set()
        return dict(done.get(timeout=seconds + 30) for _ in processes)
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()


def test_worker_processes_together_stay_within_the_requests_per_window(redis_url: str) -> None:
    arrivals, limit, seconds = Arrivals(), 3, 3 * WINDOW
    with ScriptedOpenAIServer(default=arrivals) as server:
        results = _run_workers(server, ["worker-a", "worker-b", "worker-c"], {"rpm": limit, "budget_url": redis_url}, seconds)
    times = sorted(t for t, _ in arrivals.seen)
    # In any WINDOW seconds (less half a second: the hop from a worker's take to the server's clock varies on a busy
    # machine) at most `limit` requests arrived, although each of the three workers alone would have sent as many.
    busiest = max(sum(1 for u in times if t <= u < t + WINDOW - 0.5) for t in times)
    assert busiest == limit, f"{busiest} requests arrived in one {WINDOW} s window; the budget is {limit}"
    # ... and the budget was used: every window of the run had its `limit` requests (the last may be cut short).
    assert len(times) >= limit * (seconds // WINDOW), times
    assert sum(results.values()) == len(times)  # every request was judged: none failed while it waited


class RefuseOnce(Arrivals):
    """Answers the `refuse_at`-th request with 429 and Retry-After: `pause` seconds, every other one as the judge."""

    def __init__(self, refuse_at: int, pause: int) -> None:
        super().__init__(reply_delay=0.05)
        self.refuse_at, self.pause = refuse_at, pause
        self.refused: tuple[float, str] | None = None  # when, and to whom, the 429 was answered

    def answer(self, request: dict[str, Any], number: int) -> Reply:
        if number != self.refuse_at:
            return super().answer(request, number)
        self.refused = self.seen[number - 1]
        return Reply(status=429, headers={"Retry-After": str(self.pause)}, content="slow down")


@pytest.mark.parametrize("shared", [True, False], ids=["budget", "no budget"])
def test_a_429_with_retry_after_pauses_the_other_worker_too(redis_url: str, shared: bool) -> None:
    server_side, pause = RefuseOnce(refuse_at=12, pause=2), 2
    settings = {"rpm": 10_000, "budget_url": redis_url, "max_retries": 2} if shared else {"max_retries": 2}
    with ScriptedOpenAIServer(default=server_side) as server:
        _run_workers(server, ["worker-a", "worker-b"], settings, seconds=3)
    assert server_side.refused is not None
    refused_at, refused = server_side.refused
    other = "worker-b" if refused == "worker-a" else "worker-a"
    # The other worker may have been past the budget already when the 429 was answered (a few ms, more on a busy
    # machine); after that it waits out the pause like the worker that got the 429.
    during = [name for t, name in server_side.seen if refused_at + 0.3 < t < refused_at + pause - 0.1]
    if shared:
        assert during == [], f"requests arrived during the shared pause: {during}"
    else:  # today's behaviour, the control: only the refused worker backs off
        assert other in during and refused not in during


def test_the_budget_is_shared_within_a_process_without_redis(monkeypatch) -> None:
    """The embedded default (no REDIS_URL): every judge of the process, and its threads, share one in-memory budget."""
    monkeypatch.setattr(budget, "WINDOW", 1)
    arrivals = Arrivals()
    with ScriptedOpenAIServer(default=arrivals) as server:
        config = _config(server.base_url, rpm=4)
        judges = [OpenAIJudge(config), OpenAIJudge(dataclasses.replace(config, model="m2"))]
        assert shared_budget(config) is shared_budget(dataclasses.replace(config, model="m2"))  # per endpoint and key
        threads = [threading.Thread(target=j.run, args=("prompt_objective", TASK, f"worker-{n} fox")) for n, j in enumerate(judges * 3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
    times = sorted(t for t, _ in arrivals.seen)
    assert len(times) == 6 and times[3] - times[0] < 0.8  # four at once, the window's budget
    assert times[4] - times[0] >= 0.8  # the other two waited for the first ones to leave the 1 s window


def test_without_rpm_or_tpm_nothing_changes(openai_server: ScriptedOpenAIServer) -> None:
    config = _config(openai_server.base_url, budget_url="redis://127.0.0.1:1/0")  # never contacted
    assert shared_budget(config) is None
    judge = OpenAIJudge(config)
    assert judge.run("prompt_objective", TASK, "a fox").status == "ok"
    hooks = judge._client._client.event_hooks
    assert len(hooks["request"]) == 1 and len(hooks["response"]) == 1  # the request counter and its 429 count only


def test_the_budget_settings_do_not_change_the_judge_version() -> None:
    """RPM, TPM and the token estimate change when requests are sent, never what they say: same judge, same board."""
    plain = _config("http://127.0.0.1:9/v1")
    budgeted = _config("http://127.0.0.1:9/v1", rpm=60, tpm=40_000, image_tokens=85, reply_tokens=50, budget_url="redis://x:1/2")
    assert OpenAIJudge(plain).version == OpenAIJudge(budgeted).version
    assert OpenAIJudge(plain).spec.document() == OpenAIJudge(budgeted).spec.document()
    assert "redis://x" not in repr(budgeted)  # a Redis URL may hold a password


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"rpm": 0}, "ATELIER_JUDGE_RPM=0: must be at least 1"),
        ({"tpm": -5}, "ATELIER_JUDGE_TPM=-5: must be at least 1"),
        ({"image_tokens": -1}, "ATELIER_JUDGE_IMAGE_TOKENS=-1: must be at least 0"),
        ({"reply_tokens": -1}, "ATELIER_JUDGE_REPLY_TOKENS=-1: must be at least 0"),
    ],
)
def test_bad_budget_settings_are_refused_naming_the_setting(changes: dict[str, int], named: str) -> None:
    with pytest.raises(JudgeConfigError) as refused:
        JudgeConfig(**changes)
    assert named in str(refused.value)


@pytest.mark.parametrize(
    "env, named",
    [
        ({"ATELIER_JUDGE_TPM": "lots"}, "ATELIER_JUDGE_TPM='lots': expected an integer"),
        ({"ATELIER_JUDGE_IMAGE_TOKENS": "-1"}, "ATELIER_JUDGE_IMAGE_TOKENS=-1: must be at least 0"),
        ({"ATELIER_JUDGE_PRICE_INPUT": "2", "ATELIER_JUDGE_PRICE_OUTPUT": "8"}, "ATELIER_JUDGE_PRICES_SOURCE is unset"),
    ],
)
def test_start_up_refuses_a_bad_budget_setting(env: dict[str, str], named: str) -> None:
    from tests.test_settings_and_layout import start

    result = start(env)
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and named in result.stderr


PRICES = {"ATELIER_JUDGE_PRICE_INPUT": "2.00", "ATELIER_JUDGE_PRICE_OUTPUT": "8", "ATELIER_JUDGE_PRICES_SOURCE": "OpenAI, 2026-12-01"}


@pytest.mark.parametrize(
    "env, named",
    [
        ({"ATELIER_JUDGE_PRICE_INPUT": "2"}, "ATELIER_JUDGE_PRICE_OUTPUT is unset but other judge prices are set"),
        ({"ATELIER_JUDGE_PRICES_SOURCE": "somewhere"}, "ATELIER_JUDGE_PRICE_INPUT is unset"),
        ({**PRICES, "ATELIER_JUDGE_PRICE_INPUT": "two"}, "ATELIER_JUDGE_PRICE_INPUT='two': expected a number of US dollars"),
        ({**PRICES, "ATELIER_JUDGE_PRICE_OUTPUT": "-1"}, "ATELIER_JUDGE_PRICE_OUTPUT='-1': must be zero or more"),
        ({**PRICES, "ATELIER_JUDGE_PRICE_CACHED_INPUT": "3"}, "ATELIER_JUDGE_PRICE_CACHED_INPUT=3: more than ATELIER_JUDGE_PRICE_INPUT=2"),
        ({**PRICES, "ATELIER_JUDGE_BATCH_DISCOUNT": "50"}, "ATELIER_JUDGE_BATCH_DISCOUNT='50': must be at least 0 and below 1"),
    ],
)
def test_bad_judge_prices_are_refused_naming_the_setting(env: dict[str, str], named: str) -> None:
    with pytest.raises(JudgeConfigError) as refused:
        prices_from_environ(env)
    assert named in str(refused.value)


def test_prices_price_the_providers_usage_plain_cached_and_batched() -> None:
    assert prices_from_settings(prices_from_environ({})) is None
    unpriced = cost_record(Usage(1, 100, 0, 10), None)  # tokens only, and a note that says why
    assert (unpriced["prompt_tokens"], unpriced["usd"], unpriced["usd_batch"], unpriced["note"]) == (
        100,
        None,
        None,
        "no prices configured",
    )
    prices = prices_from_settings(prices_from_environ(PRICES))
    assert prices == Prices(input=2.0, cached_input=2.0, output=8.0, batch_discount=0.0, source="OpenAI, 2026-12-01")  # no discounts set
    discounted = prices_from_settings(
        prices_from_environ({**PRICES, "ATELIER_JUDGE_PRICE_CACHED_INPUT": "0.5", "ATELIER_JUDGE_BATCH_DISCOUNT": "0.5"})
    )
    usage = Usage(requests=3, prompt_tokens=3_000_000, cached_prompt_tokens=1_000_000, completion_tokens=500_000)
    assert discounted.usd(usage, cache=False) == 3 * 2.0 + 0.5 * 8.0  # plain: 10 USD
    assert discounted.usd(usage) == 2 * 2.0 + 1 * 0.5 + 0.5 * 8.0  # cached: 8.5 USD
    assert discounted.usd(usage, batch=True) == pytest.approx(8.5 / 2) and discounted.usd(usage, cache=False, batch=True) == 5.0
    record = cost_record(usage, discounted)
    assert (record["usd"], record["usd_batch"], record["cached_share"], record["note"]) == (8.5, 4.25, 1 / 3, "")
    assert record["prices"]["source"] == "OpenAI, 2026-12-01" and record["requests"] == 3


def test_the_site_passes_its_redis_and_budget_to_the_judge(settings, scripted_judge, redis_url: str) -> None:
    from evaluation import runtime

    settings.REDIS_URL, settings.ATELIER_JUDGE_RPM, settings.ATELIER_JUDGE_TPM = redis_url, 120, 40_000
    runtime.reset()
    config = runtime.judge_config()
    assert (config.budget_url, config.rpm, config.tpm) == (redis_url, 120, 40_000)
    assert shared_budget(config) is not None and runtime.judge().run("prompt_objective", TASK, "a fox").status == "ok"


def test_a_request_is_counted_by_the_real_tokenizer_with_images_and_reply_allowance() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 40_000}}  # image bytes are not text
    body = {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "hello" + " hello" * 99},  # 100 tokens in o200k_base ("hello", " hello" x 99)
            {"role": "user", "content": [{"type": "text", "text": " fox" * 200}, image, image]},  # 200 tokens
        ],
    }
    encoded = json.dumps(body).encode()
    # OpenAI's count of a chat request: 3 per message and its one-token role, 3 to prime the reply; then the images
    # and the reply allowance, which only the provider (images) and the model (reply) could count.
    chat = 100 + 200 + 2 * (3 + 1) + 3
    assert estimate_tokens(encoded, image_tokens=255, reply_tokens=300) == chat + 2 * 255 + 300
    with_max = json.dumps({**body, "max_tokens": 1024}).encode()
    assert estimate_tokens(with_max, image_tokens=255, reply_tokens=300) == chat + 510 + 1024
    assert estimate_tokens(b"not json", image_tokens=255, reply_tokens=300) == 2 + 300  # "not", " json"
    # the characters / 4 rule this replaces said 100 for "x" * 400, which is 50 tokens; cl100k_base (gpt-4) is there too
    assert tokens.count("x" * 400) == 50 and tokens.count("hello" + " hello" * 99, "cl100k_base") == 100


def test_retry_after_reads_milliseconds_seconds_and_dates() -> None:
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"retry-after": "3"}) == 3.0
    in_ten = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 10))
    assert 8 <= (retry_after({"retry-after": in_ten}) or 0) <= 10
    assert retry_after({}) is None and retry_after({"retry-after": "soon"}) is None


def test_a_token_window_waits_for_room_and_keeps_two_counters_whatever_the_budget(redis_url: str) -> None:
    import redis

    small = JudgeBudget(storage_url=redis_url, identity="t-small", rpm=None, tpm=1_000, image_tokens=0, reply_tokens=0, window=1)
    assert small.take(600) < 0.5 and small.take(400) < 0.5  # the window's 1,000 tokens, at once
    assert 0.5 < small.take(300) < 3  # waits until enough of the first requests' tokens have slid out of the window
    big = JudgeBudget(storage_url=redis_url, identity="t-big", rpm=None, tpm=2_000_000, image_tokens=0, reply_tokens=0)
    for _ in range(50):
        assert big.take(1_111) < 0.5
    assert big._sliding.get_window_stats(big._tokens, "t-big").remaining == 2_000_000 - 50 * 1_111  # counted to the token
    keys = redis.Redis.from_url(redis_url).keys(f"{budget.NAMESPACE}:*t-big*")
    assert len(keys) == 1 and redis.Redis.from_url(redis_url).type(keys[0]) == b"string"  # one counter, not a list entry per token
    assert big._within_budget(3_000_000) == 2_000_000  # a request above the whole budget takes all of it, and is not refused forever
