"""Bad prompt files: every problem names its line or the limit, and nothing is stored."""

from __future__ import annotations

import html
import json

import pytest

from evaluation.models import PromptEntry, Submission
from submissions.parsing import Limits, PromptFileError, parse_prompt_file

KNOWN = {"oe-s01", "co-s01"}
LIMITS = Limits(max_bytes=2000, max_chars=50, max_samples=4)
ROOMY = Limits(max_bytes=10_000_000, max_chars=50, max_samples=4)


def errors_of(name: str, data: bytes) -> list[str]:
    with pytest.raises(PromptFileError) as info:
        parse_prompt_file(name, data, KNOWN, LIMITS)
    return info.value.errors


def jsonl(*rows) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows).encode()


def test_parses_jsonl_and_csv_alike():
    rows = parse_prompt_file(
        "p.jsonl", jsonl({"task_id": "oe-s01", "prompt": "a cat"}, {"task_id": "oe-s01", "sample": 1, "prompt": "a dog"}), KNOWN, LIMITS
    )
    csv_rows = parse_prompt_file("p.csv", b'task_id,prompt,sample\noe-s01,a cat,0\noe-s01,"a dog, running",1\n', KNOWN, LIMITS)
    assert [(r.task_id, r.sample, r.prompt) for r in rows] == [("oe-s01", 0, "a cat"), ("oe-s01", 1, "a dog")]
    assert [(r.line, r.sample, r.prompt) for r in csv_rows] == [(2, 0, "a cat"), (3, 1, "a dog, running")]


def test_invalid_json_names_the_line():
    assert errors_of("p.jsonl", jsonl({"task_id": "oe-s01", "prompt": "ok"}, '{"task_id": "co-s01", "prompt": ')) == [
        "line 2: invalid JSON (Expecting value at column 33)"
    ]


def test_unknown_task_id_names_the_line():
    assert errors_of("p.jsonl", jsonl({"task_id": "oe-s01", "prompt": "ok"}, {"task_id": "zz-9", "prompt": "x"})) == [
        "line 2: unknown task_id 'zz-9' (not in this pack)"
    ]


def test_duplicate_task_and_sample_names_both_lines():
    errors = errors_of("p.csv", b"task_id,prompt\noe-s01,a\nco-s01,b\noe-s01,c\n")
    assert errors == ["line 4: duplicate prompt for task 'oe-s01' sample 0 (first on line 2)"]


def test_empty_prompt_and_over_length_prompt():
    errors = errors_of("p.jsonl", jsonl({"task_id": "oe-s01", "prompt": "   "}, {"task_id": "co-s01", "prompt": "x" * 51}))
    assert errors == ["line 1: prompt is empty", "line 2: prompt is 51 characters; the limit is 50"]


def test_prompts_are_nfc_and_invisible_only_prompts_are_empty():
    from evaluator.prompters.client import clean_prompt
    from evaluator.prompters.text import blank

    invisible = " \u200b\u2060\ufeff\u200d\t\u3000"  # zero-width space, word joiner, BOM, zero-width joiner, tab, ideographic space
    errors = errors_of("p.jsonl", jsonl({"task_id": "oe-s01", "prompt": invisible}, {"task_id": "co-s01", "prompt": "ok"}))
    assert errors == ["line 1: prompt is empty (only whitespace and invisible characters)"]
    (row,) = parse_prompt_file("p.jsonl", jsonl({"task_id": "oe-s01", "prompt": " cafe\u0301 poster "}), KNOWN, LIMITS)
    assert row.prompt == "caf\u00e9 poster"  # one spelling of é (NFC), outer whitespace off
    assert blank(clean_prompt('"\u200b "')) and not blank(clean_prompt("a\u200bb"))  # an endpoint's reply: the same rule


def test_sample_is_a_number_in_json_and_digits_in_csv():
    assert errors_of("p.jsonl", jsonl({"task_id": "oe-s01", "prompt": "ok", "sample": "1"})) == [
        "line 1: sample must be an integer from 0 to 3, not '1'"
    ]
    assert errors_of("p.jsonl", jsonl({"task_id": "oe-s01", "prompt": "ok", "sample": True})) == [
        "line 1: sample must be an integer from 0 to 3, not True"
    ]
    rows = parse_prompt_file("p.csv", b"task_id,prompt,sample\noe-s01,a cat, 2\n", KNOWN, LIMITS)
    assert [(r.sample, r.prompt) for r in rows] == [(2, "a cat")]


def test_wrong_encoding_names_the_line():
    data = jsonl({"task_id": "oe-s01", "prompt": "ok"}) + b'\n{"task_id": "co-s01", "prompt": "caf\xe9"}'
    assert errors_of("p.jsonl", data) == ["line 2: not UTF-8 text (byte 0xe9 at offset 74); save the file as UTF-8"]


def test_oversize_file_names_the_limit():
    assert errors_of("p.jsonl", b"x" * 2001) == ["file is 2,001 bytes; the limit is 2,000 bytes"]


def test_bad_sample_and_unknown_field_and_csv_header():
    assert errors_of("p.jsonl", jsonl({"task_id": "oe-s01", "prompt": "ok", "sample": 9, "seed": 1})) == [
        "line 1: unknown field(s) 'seed' (allowed: task_id, prompt, sample)",
        "line 1: sample must be an integer from 0 to 3, not 9",
    ]
    assert errors_of("p.csv", b"task,text\noe-s01,a\n") == [
        "line 1: the header needs columns task_id and prompt (missing: task_id, prompt)"
    ]


def test_empty_file_is_rejected():
    assert errors_of("p.jsonl", b"\n\n") == ["the file holds no prompts"]


BAD_FILES = {
    "invalid-json.jsonl": (b'{"task_id": "oe-s01", "prompt": "fine"}\n{oops\n', "line 2: invalid JSON"),
    "unknown.jsonl": (b'{"task_id": "nope", "prompt": "x"}\n', "line 1: unknown task_id 'nope'"),
    "dup.csv": (b"task_id,prompt\noe-s01,a\noe-s01,b\n", "line 3: duplicate prompt"),
    "empty.jsonl": (b'{"task_id": "oe-s01", "prompt": ""}\n', "line 1: prompt is empty"),
    "long.jsonl": (
        json.dumps({"task_id": "oe-s01", "prompt": "y" * 4001}).encode(),
        "line 1: prompt is 4,001 characters; the limit is 4,000",
    ),
    "latin1.csv": (b"task_id,prompt\noe-s01,cr\xe8me\n", "line 2: not UTF-8 text"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_web_upload_of_bad_file_lists_errors_and_stores_nothing(name, owner_client, team, sample_pack):
    data, expected = BAD_FILES[name]
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = owner_client.post(
        f"/teams/{team.slug}/submit/", {"pack": sample_pack.pk, "prompter": "p", "file": SimpleUploadedFile(name, data)}
    )
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert expected in page and "nothing was stored" in page
    assert Submission.objects.count() == 0 and PromptEntry.objects.count() == 0


def test_web_upload_of_oversize_file_names_the_limit(owner_client, team, sample_pack, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.ATELIER_MAX_UPLOAD_BYTES = 100
    big = SimpleUploadedFile("big.jsonl", b'{"task_id": "oe-s01", "prompt": "' + b"z" * 200 + b'"}')
    response = owner_client.post(f"/teams/{team.slug}/submit/", {"pack": sample_pack.pk, "prompter": "p", "file": big})
    assert response.status_code == 400
    assert "file is 101 bytes; the limit is 100 bytes" in response.content.decode()
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"task_id": "oe-s01", "prompt": "a cat\\u0000 in snow"}', "line 1: prompt contains a NUL character (U+0000)"),
        ('{"task_id": "oe-s01", "prompt": "a cat \\ud800 alone"}', "line 1: prompt contains an unpaired surrogate ('\\ud800')"),
        (
            '{"task_id": "oe-s01", "prompt": "x", "sample": ' + "9" * 5000 + "}",
            "line 1: invalid JSON (a number of 5,000 digits; at most 20 are accepted)",
        ),
        ('{"task_id": "oe-s01", "prompt": "x", "sample": NaN}', "line 1: invalid JSON (NaN is not a number JSON allows)"),
        ('{"task_id": "oe-s01", "prompt": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", "line 1: invalid JSON (nested too deeply)"),
        ('{"task_id": ["oe-s01"], "prompt": "x"}', "line 1: task_id is missing or not a string"),
        ('{"task_id": "\\ud83d", "prompt": "x"}', "line 1: unknown task_id '\\ud83d' (not in this pack)"),
    ],
)
def test_hostile_lines_are_named_not_crashed_on(line, problem):
    with pytest.raises(PromptFileError) as info:
        parse_prompt_file("p.jsonl", line.encode(), KNOWN, ROOMY)
    errors = info.value.errors
    assert problem in errors, errors
    assert all(msg.encode("utf-8") for msg in errors)  # every message can be sent back as UTF-8


def test_a_flood_of_bad_lines_gets_a_bounded_answer():
    data = b"\n".join(b"{not json" for _ in range(100_000))
    with pytest.raises(PromptFileError) as info:
        parse_prompt_file("p.jsonl", data, KNOWN, ROOMY)
    assert info.value.total == 100_000 and len(info.value.errors) == 51
    assert info.value.errors[-1] == "… and 99,950 more problem(s)" and sum(len(e) for e in info.value.errors) < 10_000
