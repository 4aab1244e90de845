"""How the web server runs (``gunicorn config.wsgi -c config/gunicorn.py``): docker/compose.yml, the deployment docs
and the load benchmarks (benchmarks/http_load.py, benchmarks/chat_load.py) all start it with this file.

Sync workers: a rater's page or answer is a few milliseconds of CPU, and nothing in a request waits on
anything slow. A chat turn stores the message and returns; the bot is asked in the worker's call threads
(``studies.chat.calls``), so a slow bot holds a thread blocked on a socket, never the worker.

``graceful_timeout`` outlasts the reply deadline (``CONCORD_CHAT_REPLY_DEADLINE``, 25 s): a worker that is
stopped or restarted lets the calls it runs finish and store their replies; a worker that is killed
leaves them to be resumed by the next look at the chat. ``WEB_CONCURRENCY`` sets the number of workers
(gunicorn's own variable; one or two per core)."""
import os

wsgi_app = "config.wsgi"
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
# Not gthread: a rater's request is CPU-bound, and beside several of them in one interpreter the call
# threads' many short socket waits each queue for the interpreter lock (measured with chat_load.py:
# turns of 12 s against 2 s bot calls).
worker_class = "sync"
# The application is loaded once in the master and forked: a worker that was killed is replaced by one
# that answers at once (loading Django and every app in the new worker took 6-7 s on the shared box,
# measured by http_load.py's kills). Nothing opens a database connection or a thread at import time
# (the chat's call pool is made per process on first use, studies.chat.calls).
preload_app = True
timeout = 60
graceful_timeout = int(float(os.environ.get("CONCORD_CHAT_REPLY_DEADLINE", "25"))) + 10
keepalive = 5
# gunicorn 27's default control socket path is shared by every gunicorn of the user on the machine
control_socket_disable = True


def pre_fork(server, worker):
    """In the master, once, before the first fork: import every view (the URLconf) and compile the rater
    pages' templates, so that each worker, a replacement too, starts with them."""
    if getattr(server, "concord_warm", False):
        return
    server.concord_warm = True
    from django.template.loader import get_template
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - importing config.urls and every view module is the point
    for name in ("raters/item.html", "raters/chat.html", "raters/message.html"):
        get_template(name)
