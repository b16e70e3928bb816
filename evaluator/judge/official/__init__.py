"""The "official" route: AtelierEval's own judge, reproduced from a user's checkout of the public release.

Nothing of the release is shipped here. Given the folder of a checkout (ATELIER_OFFICIAL_RELEASE), the route
reads at run time what the release's judge sends and how it scores (docs/judge-vs-ateliereval.md lists every difference
between this route, the release, the paper and our own route "ateliereval"):

  layout.py     the files the route needs, and what is missing from a folder (cheap: settings import it);
  source.py     the wording the release keeps in its Python code (exemplar framing, task descriptions),
                read with `ast` from its source and never executed;
  release.py    OfficialRelease: templates, anchored level labels, request options, checklists, memory
                banks and task descriptions, loaded and checked, with a fingerprint of every file read;
  requests.py   the four requests, built the release's way (pure functions);
  replies.py    the release's reply parsing (pure functions);
  judge.py      OfficialJudge: retrieval from the release's memory banks, the calls, the judge spec;
  composite.py  the top-1 of N selection the paper reports, applied to the leaderboard's units.
"""
