from django.core.management.base import BaseCommand
from django.db import transaction

from evaluation.crypto import rotate
from teams.models import Endpoint


class Command(BaseCommand):
    help = "Re-encrypt every stored endpoint API key with the first key of ATELIER_SECRET_KEYS (see docs/endpoints.md: Rotating keys)."

    def handle(self, *args, **options):
        done = 0
        with transaction.atomic():
            for endpoint in Endpoint.objects.exclude(key_encrypted="").select_for_update():
                endpoint.key_encrypted = rotate(endpoint.key_encrypted)
                endpoint.save(update_fields=["key_encrypted"])
                done += 1
        self.stdout.write(f"re-encrypted {done} endpoint key(s) with the first key of ATELIER_SECRET_KEYS")
