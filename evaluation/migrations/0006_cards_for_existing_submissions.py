"""Every existing submission gets its team's card for its prompter name (one card per team and name, made here with
only what the platform itself knows: a study's participants are people, a baseline is a rule), its publication date
(the finish time: the first publication was not recorded before) and, where published, the card's first version."""

from django.db import migrations


def forwards(apps, schema_editor):
    Submission = apps.get_model("evaluation", "Submission")
    Prompter = apps.get_model("teams", "Prompter")
    PrompterVersion = apps.get_model("teams", "PrompterVersion")
    fields = ("name", "kind", "family", "weights", "parameters", "paper_url", "code_url", "licence", "description", "contact")
    cards = {}
    for submission in Submission.objects.filter(card__isnull=True).order_by("pk").iterator():
        key = (submission.team_id, submission.prompter)
        if key not in cards:
            kind = "human" if submission.origin == "human" else "rule" if submission.is_baseline else ""
            card, made = Prompter.objects.get_or_create(team_id=submission.team_id, name=submission.prompter, defaults={"kind": kind})
            version = PrompterVersion.objects.filter(prompter=card).order_by("number").last()
            if version is None:
                values = {name: getattr(card, name) for name in fields}
                version = PrompterVersion.objects.create(prompter=card, number=1, values=values, changed=["made from submissions"])
            cards[key] = (card, version)
        card, version = cards[key]
        submission.card = card
        if submission.published:
            submission.card_version = version
            submission.published_at = submission.published_at or submission.finished or submission.created
        submission.save(update_fields=["card", "card_version", "published_at"])


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0005_submission_cards"), ("teams", "0002_prompter_cards")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
