import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atelier.settings")
application = get_wsgi_application()

from evaluation.workqueue import run_in_background  # noqa: E402  (needs the settings loaded above)

run_in_background()  # the embedded default (no REDIS_URL): this process's jobs run on a thread, never in a request
