from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from evaluator.judge.scales import SCALES

register = template.Library()


@register.filter
def lookup(mapping, key):
    """{{ row.backends|lookup:name }}: dictionary access with a variable key."""
    return mapping.get(key) if mapping else None


@register.filter
def score(value, digits: int = 1):
    """A number with `digits` decimals; "—" for no number (None, or a missing key the template resolved to "")."""
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


@register.filter
def on_scale(value, scale_name: str):
    """A figure or judgement value with as many decimals as its scale shows (1 for 0–100, 2 for 1–5, 3 for 0–1)."""
    scale = SCALES.get(scale_name)
    return score(value, scale.digits if scale else 3)


@register.filter
def index(sequence, position: int):
    """{{ rows|index:forloop.counter0 }}: list access with a variable position."""
    try:
        return sequence[position]
    except (IndexError, TypeError, KeyError):
        return None


@register.filter
def figure_cell(figure):
    """A board cell: the value on its scale, its interval and failures beneath (a filter, not an include: a board
    page has hundreds of cells and an include costs a template render each)."""
    if not figure:
        return mark_safe('<td class="num">—</td>')
    standing = getattr(figure, "standing", "full")
    if standing == "withheld":
        return format_html('<td class="num">withheld<br><span class="ci">{}</span></td>', figure.rests_on)
    shown = format_html("{}", on_scale(figure.value, figure.scale))
    if standing == "partial":
        shown += format_html('<br><span class="ci">partial: {}</span>', figure.rests_on)
    if figure.ci_low is not None:
        shown += format_html(
            '<br><span class="ci">[{}, {}]</span>', on_scale(figure.ci_low, figure.scale), on_scale(figure.ci_high, figure.scale)
        )
    if figure.failures:
        shown += format_html('<br><span class="ci" title="failed units left out">{} failed</span>', figure.failures)
    return format_html('<td class="num">{}</td>', shown)


@register.simple_tag
def predictor_problem() -> str:
    """Why the installed difficulty predictor cannot be used ("" when it can, or none is installed): for staff."""
    from tasks.difficulty import state

    return state()[1]


@register.simple_tag
def jobs_in_process() -> bool:
    """Whether jobs run in this site's own process (no REDIS_URL): then no RQ worker exists, and django-rq's page would
    show 0 workers on a Redis this site does not use, so pages say "in-process" instead."""
    from django.conf import settings

    return not settings.REDIS_URL
