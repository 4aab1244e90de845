"""python manage.py demo_serve: the Celery workers and the beat as ``config.workers`` defines them (main,
calls, gpu) and the chat demo's small rule-based bot (studies.chat.local_bot, on 127.0.0.1:8765) beside the web server, on the embedded
defaults. Prints the URLs and the login; Ctrl-C or SIGTERM stops them all (and on Linux the worker and
the bot also stop when this process dies any other way: PR_SET_PDEATHSIG)."""
import ctypes
import signal
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from studies.authoring.demo import DEMO_PASSWORD, DEMO_USER
from studies.chat.demo import BOT_PORT

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the parent dies (Linux), so a SIGKILLed demo leaves no worker."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through runserver, so the finally below stops the children


def _workers_start() -> list[subprocess.Popen]:
    """One worker of each kind in ``config.workers`` and the beat (the same as the compose file's)."""
    from config.workers import WORKERS, beat_argv, worker_argv

    started = []
    for kind in (*WORKERS, "beat"):
        command = beat_argv() if kind == "beat" else worker_argv(kind, "-n", f"demo-{kind}@%h")
        process = subprocess.Popen(command, preexec_fn=_die_with_parent)
        process.kind = kind
        started.append(process)
    return started


class Command(BaseCommand):
    help = "Run the web server and a Celery worker for the demo."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--no-worker", action="store_true")
        parser.add_argument("--no-bot", action="store_true", help="do not start the chat demo's bot")
        parser.add_argument("--bot-port", type=int, default=BOT_PORT,
                            help="the chat demo bot's port (two demos on one machine: load_demo --chat-bot-port "
                                 "the same number)")

    def handle(self, *args, **options):
        # SIGTERM (make demo stopped by a process manager, `kill`) used to end this process at once,
        # leaving the Celery worker running; it now unwinds like Ctrl-C.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        workers = [] if options["no_worker"] else _workers_start()
        worker = workers[0] if workers else None
        bot = None
        if not options["no_bot"]:
            bot = subprocess.Popen([sys.executable, "-m", "studies.chat.local_bot", "--port", str(options["bot_port"])],
                                   stdout=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        base = f"http://{options['host']}:{options['port']}"
        self.stdout.write(self.style.SUCCESS("\nConcord is running on the embedded defaults."))
        self.stdout.write(f"  Researcher pages: {base}/   (login {DEMO_USER} / {DEMO_PASSWORD})")
        self.stdout.write(f"  API docs:         {base}/api/docs/")
        self.stdout.write(f"  Admin:            {base}/admin/")
        self.stdout.write(f"  Database:         {settings.DATABASES['default']['NAME']}")
        self.stdout.write(f"  Broker:           {settings.CELERY_BROKER_URL}"
                          + (f" (worker pid {worker.pid} main; " + ", ".join(f"{p.kind} pid {p.pid}" for p in workers[1:])
                             + ")" if worker else ""))
        if bot is not None:
            self.stdout.write(f"  Chat demo bot:    http://127.0.0.1:{options['bot_port']}/rule/chat and /parrot/chat "
                              f"(pid {bot.pid}); settings allow it with CHAT_ALLOWED_NETWORKS")
        self.stdout.write("")
        try:
            call_command("runserver", f"{options['host']}:{options['port']}", use_reloader=False)
        finally:
            for process in (*workers, bot):
                if process is not None:
                    process.terminate()
                    try:
                        process.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        process.kill()
