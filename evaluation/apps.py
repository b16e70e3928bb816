from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """The evaluation layer: it owns the pipeline's tables (evaluation.models) and the unit work on them."""

    name = "evaluation"
