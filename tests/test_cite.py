"""Cite the board (issue 32, item 6): the board page's cite block names the pack, its revision, the judge, its version
and the board's current signed release with its digest, as BibTeX and CITATION.cff fields; a board without a release
says so and gives the fields without a digest."""

from __future__ import annotations

import html
import re

import pytest

from evaluation.models import BoardRow, Submission
from leaderboard.models import Release
from leaderboard.releases import key_create
from submissions.services import submissions_publish
from tests.test_sota import entry

pytestmark = pytest.mark.sqlite_pass(
    reason="the block is text built in Python from the latest release row; releases themselves are tested on both databases (tests/test_releases.py)"
)

COPY_SCRIPT = 'src="/static/js/copy.js"'
COPY_BUTTON = 'button[data-copy="cite-bibtex"]'
WATCH_LABELS = (
    "const button = arguments[0]; window.copyLabels = [];"
    "new MutationObserver(() => window.copyLabels.push(button.textContent)).observe(button, {childList: true, characterData: true, subtree: true});"
)


def block(content: str, name: str) -> str:
    """The text of the cite block's <pre id=name>, as a reader copies it."""
    return html.unescape(re.search(rf'<pre class="command" id="{name}">(.*?)</pre>', content, re.S).group(1))


def publish(team, pack, *names: str) -> list[Submission]:
    made = [entry(team, pack, name, i, 50.0 + i, OE=50.0, CO=50.0, IM=50.0) for i, name in enumerate(names)]
    submissions_publish(submissions=Submission.objects.filter(pk__in=[s.pk for s in made]))
    return made


def test_the_board_cites_its_current_release_with_pack_revision_judge_and_digest(client, team, sample_pack, settings):
    settings.ATELIER_SITE_URL = "https://atelier.example.org"
    key_create()
    publish(team, sample_pack, "first")  # the board job releases the board
    publish(team, sample_pack, "second")  # ... and again: release 2 is the current one
    release = Release.objects.get(number=2)
    content = client.get(f"/?board={sample_pack.pk}:{sample_pack.revision}").content.decode()
    assert 'id="cite"' in content and 'id="cite-no-release"' not in content and COPY_SCRIPT in content
    assert release.digest in content.split('id="cite-release"')[1].split("</p>")[0]
    bibtex = block(content, "cite-bibtex")
    assert bibtex.startswith(f"@misc{{atelier-sample-v{sample_pack.version}-rev1-offline-1-release2,")
    title = re.search(r"title = \{\{(.*)\}\},", bibtex).group(1)
    assert f"sample v{sample_pack.version} revision 1" in title and "judge offline version 1" in title and "release 2" in title
    assert f"digest (SHA-256 of its MANIFEST.json) {release.digest}" in bibtex and release.key.fingerprint in bibtex
    board_url = f"https://atelier.example.org/?board={sample_pack.pk}:1&judge=offline%7C1"
    assert f"url = {{{board_url}}}," in bibtex and f"year = {{{release.created.year}}}," in bibtex
    assert f"\\url{{https://atelier.example.org/releases/{release.digest}.zip}}" in bibtex
    cff = block(content, "cite-cff")
    assert (
        f'value: "sha256:{release.digest}"' in cff and 'version: "release 2"' in cff and f"date-released: {release.created:%Y-%m-%d}" in cff
    )
    assert '- "pack revision: 1"' in cff and '- "judge: offline"' in cff and '- "judge version: 1"' in cff and f'url: "{board_url}"' in cff
    assert Release.objects.get(number=1).digest not in content  # the latest release, not the one before


def test_a_board_without_a_release_says_so_and_cites_it_without_a_digest(client, team, sample_pack):
    sample_pack.name = "sample & <friends>_2"  # what a pack may be called: escaped for BibTeX, and for the page
    sample_pack.save(update_fields=["name"])
    publish(team, sample_pack, "first")  # no release key: no release
    content = client.get("/").content.decode()
    assert "This board has no signed release yet</strong> (this site has no release key)" in content
    assert "&lt;friends&gt;" in content and "<friends>" not in content
    bibtex, cff = block(content, "cite-bibtex"), block(content, "cite-cff")
    assert r"sample \& <friends>\_2 v" in bibtex and "release" not in bibtex.split("note")[0] and "sha256" not in cff
    assert "No signed release of this board yet (no digest)" in bibtex and "judge offline version 1" in bibtex
    assert '"pack: sample & <friends>_2"' in cff and "identifiers" not in cff and "has no signed release yet" in cff


def test_a_release_made_after_the_page_was_cached_is_cited_at_once(client, team, sample_pack):
    from leaderboard.releases import releases_make

    publish(team, sample_pack, "first")
    first = client.get("/")
    assert 'id="cite-no-release"' in first.content.decode()
    key_create()
    releases_make(sample_pack.pk, sample_pack.revision)  # the release job, after the board's rebuild: no new board version
    after = client.get("/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert after.status_code == 200 and Release.objects.get().digest in after.content.decode()


def test_an_entry_cites_itself_with_its_board_score_and_the_latest_release_that_carries_it(client, team, sample_pack, settings):
    settings.ATELIER_SITE_URL = "https://atelier.example.org"
    first, unreleased = publish(team, sample_pack, "first <one>")[0], entry(team, sample_pack, "draft", 5, 70.0)
    assert 'id="cite-no-release"' in client.get(f"/submissions/{first.pk}/").content.decode()  # published, no key: no release
    key_create()
    publish(team, sample_pack, "second")  # release 1 carries both entries
    release = Release.objects.get()
    assert first.pk in release.entries and 'id="cite"' not in client.get(f"/submissions/{unreleased.pk}/").content.decode()
    content = client.get(f"/submissions/{first.pk}/").content.decode()
    assert 'href="#cite" id="cite-link"' in content and release.digest in content.split('id="cite-release"')[1].split("</p>")[0]
    row = BoardRow.objects.get(submission=first)
    rank = f"rank {row.stats['rank']}" if row.stats.get("rank") is not None else "unranked"
    url = f"https://atelier.example.org/submissions/{first.pk}/?judge=offline%7C1"
    text = block(content, "cite-text")
    assert text.startswith(f"{team.name} ({release.created.year}). Entry #{first.pk}, first <one> by {team.name}, on sample v")
    assert f"overall 50.0 [42.0, 58.0] (95 % interval), {rank}; in signed release 1 of its board" in text.lower() and text.endswith(url)
    bibtex = block(content, "cite-bibtex")
    assert bibtex.startswith(f"@misc{{atelier-entry{first.pk}-sample-v{sample_pack.version}-rev1-offline-1-release1,")
    assert f"author = {{{{{team.name}}}}}," in bibtex and f"url = {{{url}}}," in bibtex and release.digest in bibtex
    assert f"\\url{{https://atelier.example.org/releases/{release.digest}.zip}}" in bibtex


def test_the_cite_block_fits_a_phone_and_its_copy_buttons_work(browser, team, sample_pack):
    from tests.test_phone_widths import DESKTOP, PHONE, set_width

    key_create()
    publish(team, sample_pack, "first")
    for width in (DESKTOP, PHONE):
        set_width(browser, width)
        browser.get(f"/?board={sample_pack.pk}:{sample_pack.revision}")
        browser.wait_loaded()
        browser.wait(lambda d: browser.find(COPY_BUTTON).is_displayed())  # shown by copy.js: without script there is no button
        browser.driver.execute_script("arguments[0].scrollIntoView()", browser.find("#cite"))
        # The button's word shows for 1.5 s; a loaded machine can poll past that, so the labels it took are recorded.
        browser.driver.execute_script(WATCH_LABELS, browser.find(COPY_BUTTON))
        browser.find(COPY_BUTTON).click()
        browser.wait(lambda d: {"Copied", "Select and copy"} & set(d.execute_script("return window.copyLabels")))
        assert browser.driver.execute_script("return document.documentElement.scrollWidth") <= width
        assert [e for e in browser.driver.get_log("browser") if e["level"] == "SEVERE"] == []
        browser.shot(f"cite-{width}")
