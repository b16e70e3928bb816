from django.apps import AppConfig


class TeamsConfig(AppConfig):
    """Teams, members, API tokens and prompter endpoints: the bottom app (it imports no other app but tasks)."""

    name = "teams"
