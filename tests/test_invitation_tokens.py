"""Study invitation tokens are stored hashed (issue 41, item 7a), as API tokens are: a link made before the change still
opens after its migration, the database holds no link's token, a new link is shown once (on the page or as a CSV file)
and a wrong token gets the answer it always got."""

from __future__ import annotations

import csv
import io

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from studies.models import Invitation, Participant
from studies.services import study_create


def stored_values() -> list[str]:
    """Every value of every invitation row, as the database holds it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM studies_invitation")
        return [str(value) for row in cursor.fetchall() for value in row]


@pytest.mark.django_db(transaction=True)  # migrations run back and forth
def test_a_link_made_before_tokens_were_hashed_still_opens_and_only_its_hash_is_left(client, sample_pack):
    study = study_create(name="Pilot", pack=sample_pack, per_category=1, rounds=1)
    before = [("studies", "0003_references_follow_the_move")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = MigrationExecutor(connection).loader.project_state(before).apps.get_model("studies", "Invitation")
    old.objects.create(study_id=study.pk, token="Old-Plain-Token-0123456789")  # as 0001 stored it: the token itself
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert "Old-Plain-Token-0123456789" not in stored_values()
    assert Invitation.objects.get().prefix == "Old-Pl"
    response = client.get("/study/Old-Plain-Token-0123456789/")
    assert response.status_code == 200 and Participant.objects.filter(invitation__study=study).count() == 1


def test_new_links_are_shown_once_and_the_database_keeps_only_their_hashes(client, sample_pack, django_user_model):
    study = study_create(name="Pilot", pack=sample_pack, per_category=1, rounds=1)
    client.force_login(django_user_model.objects.create_user("staffer", password="pw-staff-123", is_staff=True))
    made = client.post(f"/studies/{study.slug}/", {"count": 2})
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    shown = made.content.decode().split('id="new-links"')[1].split("</div>")[0]
    links = [part.split("</code>")[0] for part in shown.split("<code>")[1:]]
    as_csv = client.post(f"/studies/{study.slug}/", {"count": 1, "format": "csv"})
    links += [row["link"] for row in csv.DictReader(io.StringIO(as_csv.content.decode()))]
    tokens = [link.rstrip("/").rsplit("/", 1)[1] for link in links]
    assert len(set(tokens)) == 3 and Invitation.objects.count() == 3
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert not any(token in page for token in tokens) and all(f"…/study/{token[:6]}…" in page for token in tokens)
    assert not any(token in value for token in tokens for value in stored_values())

    client.logout()
    assert all(client.get(f"/study/{token}/").status_code == 200 for token in tokens)
    for wrong in (tokens[0][:-1], "not-a-token", Invitation.objects.first().digest):  # the stored hash is no key either
        refused = client.get(f"/study/{wrong}/")
        assert refused.status_code == 410 and "This link is not valid. Check that you copied all of it." in refused.content.decode()
