from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """The evaluation layer: unit work, runtime, figures. It has no models of its own; it works on the apps' models."""

    name = "evaluation"
