"""Staff make people expert raters or hidden-item raters and give them items without a shell: admin actions on the
Users list, and the staff page /rate/queue/ (rating_queue_fill behind a form)."""

from __future__ import annotations

import re

import pytest

from ratings.models import RatingAssignment
from tests.test_expert_queue import rendered_submission

ACTION_URL = "/admin/auth/user/"


@pytest.fixture
def root(transactional_db, django_user_model):
    return django_user_model.objects.create_superuser("root", password="pw-root-123")


@pytest.fixture
def people(transactional_db, django_user_model):
    return {name: django_user_model.objects.create_user(name, password="pw-person-123") for name in ("ana", "ben", "cy")}


def act(client, action: str, *users):
    return client.post(ACTION_URL, {"action": action, "_selected_action": [u.pk for u in users]}, follow=True)


def fresh(user):
    return type(user).objects.get(pk=user.pk)  # permissions are cached per user object


def test_admin_actions_make_and_unmake_expert_and_hidden_item_raters(client, root, people):
    client.force_login(root)
    ana, ben, cy = people.values()
    page = act(client, "make_expert_raters", ana, ben)
    assert "2 user(s) made expert raters" in page.content.decode()
    assert fresh(ana).has_perm("ratings.rate_items") and not fresh(ana).has_perm("ratings.rate_hidden_items")
    assert not fresh(cy).has_perm("ratings.rate_items")

    act(client, "make_hidden_item_raters", ben, cy)  # hidden-item raters are expert raters too
    assert all(fresh(u).has_perm("ratings.rate_items") and fresh(u).has_perm("ratings.rate_hidden_items") for u in (ben, cy))
    listing = client.get(ACTION_URL).content.decode()
    assert "expert + hidden items" in listing and ">expert<" in listing  # the rater column

    act(client, "revoke_hidden_items", ben)
    assert fresh(ben).has_perm("ratings.rate_items") and not fresh(ben).has_perm("ratings.rate_hidden_items")
    page = act(client, "revoke_rater_roles", cy, root)
    assert not fresh(cy).has_perm("ratings.rate_items") and not fresh(cy).has_perm("ratings.rate_hidden_items")
    assert "Still allowed (own permission or superuser): root" in page.content.decode()


def test_the_users_action_opens_the_queue_page_with_the_raters_chosen(client, root, people):
    client.force_login(root)
    act(client, "make_expert_raters", people["ana"], people["ben"])
    response = act(client, "give_items", people["ana"], people["ben"])
    assert response.redirect_chain[-1][0] == f"/rate/queue/?raters={people['ana'].pk}&raters={people['ben'].pk}"
    checked = set(re.findall(r'<input type="checkbox" name="raters" value="(\d+)"[^>]* checked>', response.content.decode()))
    assert checked == {str(people["ana"].pk), str(people["ben"].pk)}


def test_staff_give_items_on_the_queue_page_and_the_experts_see_them(client, root, people, team, sample_pack):
    submission = rendered_submission(team, sample_pack)
    client.force_login(root)
    act(client, "make_hidden_item_raters", people["ana"], people["ben"])
    form = {
        "submissions": [submission.pk],
        "raters": [people["ana"].pk, people["ben"].pk],
        "items": 3,
        "per_item": 2,
        "exemplar_share": 0.5,
    }
    page = client.post("/rate/queue/", form, follow=True)
    assert "6 new assignment(s) queued." in page.content.decode()
    assert RatingAssignment.objects.filter(rater=people["ana"]).count() == 3
    assert '<td class="num">3</td>' in client.get("/rate/queue/").content.decode()  # ana's open items in the raters table
    client.force_login(people["ana"])
    assert "0 done of 3" in client.get("/rate/").content.decode()


def test_the_queue_page_refuses_non_experts_and_bad_options_and_is_for_staff_only(client, root, people, team, sample_pack, stranger):
    submission = rendered_submission(team, sample_pack)
    client.force_login(stranger)
    assert client.get("/rate/queue/").status_code == 302  # to the admin login
    client.force_login(root)
    act(client, "make_expert_raters", people["ana"])
    not_expert = {
        "submissions": [submission.pk],
        "raters": [people["ana"].pk, people["cy"].pk],
        "items": 2,
        "per_item": 2,
        "exemplar_share": 0.5,
    }
    response = client.post("/rate/queue/", not_expert)
    assert response.status_code == 400 and "not one of the available choices" in response.content.decode()
    too_few = {**not_expert, "raters": [people["ana"].pk]}
    response = client.post("/rate/queue/", too_few)
    assert response.status_code == 400 and "only 1 distinct rater(s)" in response.content.decode()
    assert not RatingAssignment.objects.exists()
