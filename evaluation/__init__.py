"""The evaluation layer: what every app builds on, importing no app's services.

    evaluator/ (plain library)  <  app models  <  evaluation/  <  app services, selectors, views  <  atelier/

runtime (configured backends and judge), workqueue (RQ or in-process), units (plan,
advance, finish, rescore), rendering and judging (one unit each), figures (the
leaderboard figures rebuilt from units), memory (the judge's exemplar pool), judges
(JudgeKey: which judge version a figure belongs to), selectors (reads about units) and
jobs (thin RQ entry points). See docs/architecture-notes.md.
"""
