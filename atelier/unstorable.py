"""Middleware: a request carrying text the database cannot store is a 400 naming where the text is, before any view.

PostgreSQL refuses NUL (U+0000) in text and UTF-8 cannot encode an unpaired surrogate, so a view that filtered or
saved such a value answered 500 (issue 41: `/?q=%00`, on every database lookup of a text from the address). Checked
once here for every request: the address, each query parameter's and form field's name and value, each cookie (a
quoted cookie may spell NUL as `\\000`, and the session is looked up by it), and every key and string of a JSON body
(`\\u0000`, `\\ud800`). Uploaded files are not read here: their names are cleaned where they are stored and their lines
checked with the same rule (submissions/parsing.py). The answer is JSON under /api/ (`field` names the parameter, as
the API's other 400s do) and plain text elsewhere.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from submissions.parsing import shown, text_problem

log = logging.getLogger(__name__)


def _pairs(kind: str, params: Iterable[tuple[str, list[str]]]) -> Iterator[tuple[str, str, str]]:
    """(where, the parameter, text) for each parameter's name and values."""
    for name, values in params:
        yield f"{kind} name {shown(name)}", "", name
        for value in values:
            yield f"{kind} {shown(name)}", name, value


def _json_texts(data: object) -> Iterator[tuple[str, str, str]]:
    """(where, top-level field, text) for every key and string in a parsed JSON body, depth first, without recursion."""
    stack: list[tuple[str, str, object]] = [("", "", data)]
    while stack:
        path, field, value = stack.pop()
        if isinstance(value, str):
            yield f"JSON field {shown(path or '(the body)')}", field, value
        elif isinstance(value, dict):
            for key, item in value.items():
                yield f"JSON field name {shown(key)}", field, key
                stack.append((f"{path}.{key}" if path else key, field or key, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", field, item) for i, item in enumerate(value))


def _json_body(request: HttpRequest) -> object:
    if request.content_type != "application/json" or not request.body:
        return None
    try:
        return json.loads(request.body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        log.debug("body is not JSON (%s): the view refuses it with its own message", type(exc).__name__)
        return None


def _texts(request: HttpRequest) -> Iterator[tuple[str, str, str]]:
    yield "the address", "", request.path_info
    yield from _pairs("query parameter", request.GET.lists())
    yield from _pairs("cookie", ((name, [value]) for name, value in request.COOKIES.items()))
    if request.method == "POST":
        yield from _pairs("form field", request.POST.lists())
    yield from _json_texts(_json_body(request))


class RefuseUnstorableText:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for where, field, text in _texts(request):
            if problem := text_problem(text):
                return _refusal(request, f"{where} {problem}: this site cannot store it; send the text without it", field)
        return self.get_response(request)


def _refusal(request: HttpRequest, message: str, field: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"error": message, "field": field or None, **({"fields": {field: [message]}} if field else {})}, status=400)
    return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
