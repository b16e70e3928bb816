from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from demo import judge as demo_judge
from demo.cards import demo_cards
from demo.original import demo_original
from demo.prompter import DemoPrompterServer, site_base_url
from demo.showcase import showcase_entries, showcase_pack
from demo.study import demo_study
from evaluation import runtime
from evaluation.models import RESUMABLE, Status, Submission
from ratings.services import expert_ratings_import, rating_queue_fill
from submissions.baselines import baseline_create
from submissions.services import endpoint_create, endpoint_run_create, submission_create, submissions_publish
from tasks.loaders import read_own_pack
from tasks.services import PackRevision, pack_save
from tasks.targets import references_render, targets_render
from teams.models import Endpoint, Membership, Team

SAMPLE_PACK = settings.BASE_DIR / "tasks" / "packs" / "sample"
ORIGINAL_PACK = settings.BASE_DIR / "tasks" / "packs" / "atelier-original"
EXAMPLE_PROMPTS = settings.BASE_DIR / "examples" / "demo_prompts.jsonl"
EXAMPLE_RATINGS = settings.BASE_DIR / "examples" / "demo_expert_ratings.jsonl"
EXAMPLE_RATER = "developer (one rater, not an expert panel)"  # the file's rater: a user allowed hidden items, who cannot log in


class Command(BaseCommand):
    help = (
        "Set up the demo: migrate, load the packs, render the sample IM targets, submit the example prompts and a baseline, evaluate, publish; "
        "and a second board on the original pack (two rule-based prompters on dev and hidden test tasks)."
    )

    def handle(self, *args, **options):
        if not settings.DEBUG:
            raise CommandError("the demo creates a demo/demo superuser; run it with DEBUG=true only")
        with self._scripted_judge(), self._mail_kept():
            self._demo()

    @contextmanager
    def _mail_kept(self):
        """The team e-mails the demo's runs send (done, failed, published) are kept while it builds, not printed between
        its progress lines: it counts them and prints one as the configured backend would (the console's, in the demo)."""
        from django.core import mail
        from django.core.mail.backends.console import EmailBackend

        backend = settings.EMAIL_BACKEND
        settings.EMAIL_BACKEND, mail.outbox = "django.core.mail.backends.locmem.EmailBackend", []
        try:
            yield
        finally:
            settings.EMAIL_BACKEND, sent = backend, list(getattr(mail, "outbox", []))
            self.stdout.write(f"Notification e-mails: {len(sent)} sent to the demo team while it built (kept here, not printed).")
            if sent and backend.endswith("console.EmailBackend"):
                self.stdout.write("The last of them, as the console backend prints it (the running site prints each one so):")
                EmailBackend(stream=self.stdout._out).send_messages(sent[-1:])

    @contextmanager
    def _scripted_judge(self):
        """With ATELIER_DEMO_JUDGE, the judge's endpoint is the site's own /demo/judge/v1, which answers only once the
        site runs: while this command works in-process it serves the same rules on a port of its own (the endpoint is
        not part of the judge's identity, so the judge and its boards are the same ones the site shows)."""
        if not settings.ATELIER_DEMO_JUDGE:
            self.stdout.write("Judge: " + runtime.judge().spec.label)
            yield
            return
        if settings.REDIS_URL:
            self.stdout.write(
                f"Judge: the scripted demo judge, served by the site at {settings.OPENAI_BASE_URL}: start it for the workers."
            )
            yield
            return
        site = settings.OPENAI_BASE_URL
        with DemoPrompterServer(answer=demo_judge.completion) as server:
            settings.OPENAI_BASE_URL = server.base_url
            runtime.reset()
            self.stdout.write(f"Judge: {runtime.judge().spec.label} (OpenAIJudge against demo/judge.py's rules)")
            try:
                yield
            finally:
                self.stdout.write(f"  the scripted judge answered {server.calls} request(s).")
                settings.OPENAI_BASE_URL = site
                runtime.reset()

    def _demo(self) -> None:
        call_command("migrate", verbosity=0)
        self._release_key()
        original, _ = pack_save(data=read_own_pack(ORIGINAL_PACK))
        pack, _ = pack_save(data=read_own_pack(SAMPLE_PACK))
        backend = next(iter(runtime.backend_configs().values()))
        revision = PackRevision.begin(pack.pk)  # targets and references: one revision at most
        rendered, failures = targets_render(pack=pack, backend=backend, candidates=4, revision=revision)
        if failures:
            raise CommandError("could not render the sample pack's IM targets:\n" + "\n".join(failures))
        references_render(pack=pack, backends=list(runtime.backend_configs().values()), revision=revision)
        pack.refresh_from_db()
        self.stdout.write(f"Loaded {pack} and the original 360-task pack; {rendered} IM target(s) rendered on {backend.name}.")
        user = self._demo_user()
        team, _ = Team.objects.get_or_create(name="Demo team", defaults={"slug": "demo-team"})
        Membership.objects.get_or_create(team=team, user=user, defaults={"is_owner": True})
        same = {"team": team, "pack": pack, "pack_revision": pack.revision, "source_name": EXAMPLE_PROMPTS.name}
        demo = Submission.objects.filter(**same).exclude(status=Status.FAILED).first()
        if demo is None:
            self.stdout.write(f"Evaluating {EXAMPLE_PROMPTS.name} on {pack} ({'RQ workers' if settings.REDIS_URL else 'in-process'})…")
            demo = submission_create(
                team=team,
                pack=pack,
                prompter="Example prompter (hand-written)",
                filename=EXAMPLE_PROMPTS.name,
                data=EXAMPLE_PROMPTS.read_bytes(),
            )
        baseline = baseline_create(pack=pack, baseline="brief-verbatim")
        try:
            showcase = showcase_pack(self.stdout.write)
            runs = showcase_entries(showcase, team, self.stdout.write)
            runs += self._endpoint_runs(team, showcase)
            runs += demo_original(original, team, self.stdout.write)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        shown = [demo.pk, baseline.pk, *(r.pk for r in runs)]
        demo_cards(team, user, self.stdout.write)  # before publishing: each entry is published with its card
        published = submissions_publish(submissions=Submission.objects.filter(pk__in=shown))
        demo.refresh_from_db()
        if demo.status == Status.DONE:
            users = get_user_model().objects
            self._hidden_items_allowed(
                users.filter(username=EXAMPLE_RATER).first() or users.create_user(EXAMPLE_RATER)
            )  # half its tasks are hidden
            count = expert_ratings_import(submission=demo, filename=EXAMPLE_RATINGS.name, data=EXAMPLE_RATINGS.read_bytes())
            self.stdout.write(f"Imported {count} hand ratings of the example prompts (one rater): see /judge/.")
            queued = rating_queue_fill(submissions=Submission.objects.filter(pk=demo.pk), raters=self._experts(), items=6, per_item=2)
            self.stdout.write(
                f"Expert queue: {queued.created} new assignment(s); log in as expert1 / expert1-demo or expert2 / expert2-demo and open /rate/."
            )
        from demo.experts import demo_experts  # scripted raters (rules, not people): /judge/ shows them apart

        demo_experts(showcase, Submission.objects.filter(pk__in=shown), self.stdout.write)
        study = demo_study(showcase, self.stdout.write)
        from demo.predictor import demo_predictor  # the one hook: a predictor trained on what the demo judged

        demo_predictor(self.stdout.write)
        for s in Submission.objects.filter(pk__in=shown):
            self.stdout.write(f"  submission #{s.pk} {s.prompter}: {s.status}{' — ' + s.error if s.error else ''}")
        self.stdout.write(f"{published} submission(s) published. Log in as demo / demo for the admin.")
        done = study.participants.filter(scripted=True, submission__status=Status.DONE).count()
        self.stdout.write(
            f"Human study: {done} scripted participant(s) evaluated, on the leaderboard as Scripted (demo) — novice / skilled / all (never pooled with people)."
        )
        self.stdout.write(
            f"Take part yourself (anonymous, {study.tasks_per_participant} short tasks, a participant per browser):"
            f" http://127.0.0.1:8000{reverse('demo-study')}"
        )
        self.stdout.write(f"Study progress and exports (staff): http://127.0.0.1:8000/studies/{study.slug}/")
        if published < len(shown) and settings.REDIS_URL:
            queues = " ".join(settings.ATELIER_QUEUES)
            self.stdout.write(
                f"Start the workers and the scheduler (reconcile), e.g.:\n  python manage.py work {queues}\n  python manage.py scheduler\nthen run this command again to publish."
            )

    def _endpoint_runs(self, team, pack) -> list[Submission]:
        """Register the scripted demo prompter (a local server, no model) and run it single-turn and with 3 feedback
        rounds. Its server lives as long as this command, so with RQ workers elsewhere the runs are skipped."""
        if settings.REDIS_URL:
            self.stdout.write("Endpoint runs skipped: the demo's scripted prompter lives in this process, and RQ workers run elsewhere.")
            return []
        allowed = settings.ATELIER_PROMPTER_ALLOWED_HOSTS
        try:
            return self._run_scripted_endpoint(team, pack)
        finally:
            settings.ATELIER_PROMPTER_ALLOWED_HOSTS = allowed

    def _run_scripted_endpoint(self, team, pack) -> list[Submission]:
        runs = []
        with DemoPrompterServer() as server:
            # This command's own server (its host and port alone) is allowed while it runs; the deployer's list comes back after.
            settings.ATELIER_PROMPTER_ALLOWED_HOSTS = (*settings.ATELIER_PROMPTER_ALLOWED_HOSTS, server.base_url.split("/")[2])
            endpoint = Endpoint.objects.filter(team=team, name="scripted-demo").first()
            if endpoint is None:
                endpoint = endpoint_create(
                    team=team, name="scripted-demo", base_url=server.base_url, model="scripted rule (no model)", max_in_flight=4
                )
            Endpoint.objects.filter(pk=endpoint.pk).update(base_url=server.base_url)  # this run's port
            runs = self._scripted_runs(team, pack, endpoint)
            self.stdout.write(f"  the scripted prompter answered {server.calls} call(s); each run's page links its call log.")
        # Once this command ends its server is gone: the endpoint points at the same rule served by the demo site itself.
        Endpoint.objects.filter(pk=endpoint.pk).update(base_url=site_base_url())
        self._called_note(runs)
        self.stdout.write(f"  endpoint scripted-demo now calls {site_base_url()} (the demo site; its Test call works while the site runs)")
        return runs

    def _called_note(self, runs: list[Submission]) -> None:
        """Each run's page names the endpoint's registered address and, where its calls went elsewhere, why."""
        note = "the demo command ran it against its own in-process copy of the scripted prompter, gone once the command ended"
        for run in Submission.objects.filter(pk__in=[r.pk for r in runs]):  # as stored: prompting adds to the snapshot
            called = run.prompting.get("endpoint")
            if called and "called_note" not in called:
                Submission.objects.filter(pk=run.pk).update(prompting={**run.prompting, "endpoint": {**called, "called_note": note}})

    def _scripted_runs(self, team, pack, endpoint) -> list[Submission]:
        runs = []
        feedback = next(iter(runtime.backend_configs()))
        for rounds, condition, samples in ((1, "plain", 1), (3, "guided", 2)):  # two trajectories per task: steerability
            earlier = Submission.objects.filter(
                endpoint=endpoint, pack=pack, rounds=rounds, condition=condition, samples=samples, status__in=RESUMABLE
            ).first()
            if earlier is not None:
                runs.append(earlier)
                continue
            self.stdout.write(
                f"Endpoint run: scripted demo prompter (no model), {rounds} round(s), {samples} sample(s), condition {condition}, on {pack} (in-process)…"
            )
            runs.append(
                endpoint_run_create(
                    team=team, endpoint=endpoint, pack=pack, condition=condition, rounds=rounds, samples=samples, feedback_backend=feedback
                )
            )
        return runs

    def _hidden_items_allowed(self, user) -> None:
        group = Group.objects.get_or_create(name="Hidden-item raters")[0]
        group.permissions.add(Permission.objects.get(codename="rate_hidden_items", content_type__app_label="ratings"))
        user.groups.add(group)

    def _experts(self) -> list:
        """Two demo accounts with the expert rater role, allowed hidden items too (DEBUG-only passwords, like demo / demo)."""
        User, group = get_user_model(), Group.objects.get_or_create(name="Expert raters")[0]
        group.permissions.add(Permission.objects.get(codename="rate_items", content_type__app_label="ratings"))
        experts = []
        for name in ("expert1", "expert2"):
            user = User.objects.filter(username=name).first() or User.objects.create_user(name, password=f"{name}-demo")
            user.groups.add(group)
            self._hidden_items_allowed(user)
            experts.append(user)
        return experts

    def _release_key(self) -> None:
        """The demo signs its board releases like a deployment: with a key of its own, made once (docs/releases.md)."""
        from leaderboard.releases import key_create

        if not Path(settings.ATELIER_RELEASE_KEY).exists():
            key = key_create()
            self.stdout.write(f"Release signing key made at {settings.ATELIER_RELEASE_KEY} (fingerprint {key.fingerprint[:16]}…).")

    def _demo_user(self):
        User = get_user_model()
        user = User.objects.filter(username="demo").first()
        if user is None:
            user = User.objects.create_superuser("demo", "demo@example.invalid", "demo")
        return user
