"""The demo (`make demo`): its scripted judge, prompter, raters, predictor, study, packs, cards and `manage.py demo`.

Installed and routed only where the demo runs (settings.ATELIER_DEMO, which needs DEBUG): a deployment has neither its
routes nor its command, and no other app imports it (tests/test_layering.py)."""
