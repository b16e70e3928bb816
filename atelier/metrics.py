"""Prometheus metrics (prometheus_client), served by atelier.health.metrics_view.

Two kinds:
- what a web process measures itself: request latency by route, method and status class (RequestMetrics). Under
  gunicorn with several workers set PROMETHEUS_MULTIPROC_DIR to an empty folder shared by the workers
  (prometheus_client's multiprocess mode), so a scrape sums every worker (docs/deploying.md);
- what is read at scrape time from the source of truth, so it covers every worker on every host without a port of
  their own: queue depth per queue and state (RQ's queues and registries in Redis), units by kind and status and
  failed units by reason (the database), prompter calls by HTTP status (429s included).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import redis
from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from prometheus_client import REGISTRY, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

REQUEST_SECONDS = Histogram(
    "atelier_request_seconds", "Time to answer a request, by route name, method and status class", ["route", "method", "status"]
)
TOP_REASONS = 20  # failure reasons per kind, the most frequent first


class RequestMetrics:
    """Middleware: times every request (static files answered by whitenoise before it are not counted)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = (match.url_name or match.view_name) if match else "unmatched"
        REQUEST_SECONDS.labels(route, request.method, f"{response.status_code // 100}xx").observe(time.perf_counter() - started)
        return response


class PipelineCollector:
    """Gauges read at scrape time from Redis (queues) and the database (units)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self._queues()
        yield from self._units()
        yield from self._judge()

    def _queues(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("atelier_queues_up", "1 when the work queues' Redis answered this scrape (in-process mode: 1)")
        jobs = GaugeMetricFamily(
            "atelier_queue_jobs",
            "Jobs per queue and state (queued, started, failed, finished within rq's result time)",
            labels=["queue", "state"],
        )
        if settings.REDIS_URL:
            import django_rq
            from rq.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

            try:
                for name in settings.RQ_QUEUES:
                    queue = django_rq.get_queue(name)
                    jobs.add_metric([name, "queued"], queue.count)
                    jobs.add_metric([name, "started"], StartedJobRegistry(queue=queue).count)
                    jobs.add_metric([name, "failed"], FailedJobRegistry(queue=queue).count)
                    jobs.add_metric([name, "finished"], FinishedJobRegistry(queue=queue).count)
                up.add_metric([], 1)
            except redis.RedisError:
                up.add_metric([], 0)
        else:
            up.add_metric([], 1)
        yield up
        yield jobs

    def _units(self) -> Iterator[GaugeMetricFamily]:
        from evaluation.models import Judgement, PromptCall, Render, UnitStatus

        units = GaugeMetricFamily("atelier_units", "Units of work by kind and status (the database)", labels=["kind", "status"])
        failures = GaugeMetricFamily(
            "atelier_unit_failures", f"Failed units by kind and reason, the {TOP_REASONS} most frequent per kind", labels=["kind", "reason"]
        )
        for kind, model, reason in (("render", Render, "error"), ("judgement", Judgement, "reason")):
            for status, n in model.objects.values_list("status").annotate(n=Count("pk")).order_by():
                units.add_metric([kind, status], n)
            failed = model.objects.filter(status=UnitStatus.FAILED).values_list(reason).annotate(n=Count("pk")).order_by("-n")
            for text, n in failed[:TOP_REASONS]:
                failures.add_metric([kind, (text or "unknown")[:120]], n)
        calls = GaugeMetricFamily(
            "atelier_prompter_calls", "Calls to teams' prompter endpoints by status and HTTP status", labels=["status", "http_status"]
        )
        for status, http, n in PromptCall.objects.values_list("status", "http_status").annotate(n=Count("pk")).order_by():
            calls.add_metric([status, str(http or "")], n)
        yield units
        yield failures
        yield calls

    def _judge(self) -> Iterator[GaugeMetricFamily]:
        """Requests the judges sent (retries and repairs included), the 429s among them and the tokens the endpoint
        counted (the cached ones among the prompt tokens), per judge, as recorded on the judgements, and what they cost
        at the deployer's prices (only when prices are set; the label names their source); and the shared budget's
        windows as Redis holds them now."""
        from django.db.models import Sum

        from evaluation import runtime
        from evaluation.models import Judgement
        from evaluator.judge.budget import shared_budget
        from evaluator.judge.pricing import Usage

        spent = {
            name: GaugeMetricFamily(f"atelier_judge_{name}", text, labels=["judge"])
            for name, text in (
                ("requests", "HTTP requests sent to the judge endpoint, retries and repairs included"),
                ("throttled", "Judge requests answered 429"),
                ("prompt_tokens", "Prompt tokens the judge endpoint reported"),
                ("cached_prompt_tokens", "Of the prompt tokens, those the judge provider's prompt cache served"),
                ("completion_tokens", "Completion tokens the judge endpoint reported"),
            )
        }
        prices = runtime.judge_prices()
        cost = GaugeMetricFamily(
            "atelier_judge_cost_usd",
            "What the judge's tokens cost at the configured prices (synchronous route)",
            labels=["judge", "source"],
        )
        totals = Judgement.objects.filter(calls__gt=0).values_list("judge_id").order_by()
        totals = totals.annotate(
            Sum("calls"), Sum("throttled"), Sum("prompt_tokens"), Sum("cached_prompt_tokens"), Sum("completion_tokens")
        )
        for judge, requests, throttled, prompt, cached, completion in totals:
            for family, value in zip(spent.values(), (requests, throttled, prompt, cached, completion), strict=True):
                family.add_metric([judge], value or 0)
            if prices is not None:
                cost.add_metric([judge, prices.source], prices.usd(Usage(requests or 0, prompt or 0, cached or 0, completion or 0)))
        yield from spent.values()
        if prices is not None:
            yield cost
        budget = shared_budget(runtime.judge_config())
        if budget is None:
            return
        gauge = GaugeMetricFamily(
            "atelier_judge_budget", "The judge's shared per-minute budget now: used, limit, paused seconds", labels=["what"]
        )
        try:
            usage = budget.usage()
        except redis.RedisError:
            usage = {}
        for what, value in usage.items():
            gauge.add_metric([what], value)
        yield GaugeMetricFamily("atelier_judge_budget_up", "1 when the budget's Redis answered this scrape", value=1 if usage else 0)
        yield gauge


_pipeline = CollectorRegistry(auto_describe=False)
_pipeline.register(PipelineCollector())


def exposition() -> tuple[bytes, str]:
    """The scrape's body (this process's, or every worker's in multiprocess mode, then the pipeline's gauges)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    return generate_latest(registry) + generate_latest(_pipeline), CONTENT_TYPE_LATEST
