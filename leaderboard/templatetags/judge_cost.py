"""{% judge_cost_of submission as cost %}: the judge's requests, tokens and their cost at the deployer's prices, for the
submission page's include (templates/leaderboard/_judge_cost.html), so the page's view needs no field of its own."""

from django import template

from evaluation.selectors import submission_judge_cost

register = template.Library()


@register.simple_tag
def judge_cost_of(submission) -> dict:
    return submission_judge_cost(submission)
