"""manage.py release_key create [--rotate] | list: the Ed25519 key that signs whole-board releases (docs/releases.md)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from leaderboard.models import SigningKey
from leaderboard.releases import NoReleaseKey, key_create


class Command(BaseCommand):
    help = "Create (or rotate) the key that signs board releases, or list every key the site has signed with."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["create", "list"])
        parser.add_argument("--rotate", action="store_true", help="replace an existing key (its public key stays listed, retired)")
        parser.add_argument("--path", help=f"where the private key goes (default: ATELIER_RELEASE_KEY, {settings.ATELIER_RELEASE_KEY})")

    def handle(self, *args, action: str, rotate: bool, path: str | None, **options):
        if action == "create":
            try:
                key = key_create(path, rotate=rotate)
            except (NoReleaseKey, OSError) as error:
                raise CommandError(str(error)) from None
            self.stdout.write(f"release key written to {path or settings.ATELIER_RELEASE_KEY} (mode 0600); fingerprint {key.fingerprint}")
            self.stdout.write("Back the file up where only operators can read it; the public key is served at /releases/keys.json.")
        for key in SigningKey.objects.order_by("created"):
            until = f"retired {key.retired:%Y-%m-%d %H:%M}" if key.retired else "in use"
            self.stdout.write(f"{key.fingerprint}  since {key.created:%Y-%m-%d %H:%M} UTC, {until}")
