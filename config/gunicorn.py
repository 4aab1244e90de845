"""How the web server runs (``gunicorn config.wsgi -c config/gunicorn.py``): docker/compose.yml, the README
and the load benchmarks (benchmarks/http_load.py, benchmarks/chat_load.py) all start it with this file.

Sync workers: a rater's page or answer is a few milliseconds of CPU, and nothing in a request waits on
anything slow. A chat turn stores the message and returns; the bot is asked in the worker's call threads
(``studies.chat.calls``, issue 33), so a slow bot holds a thread blocked on a socket, never the worker.

``graceful_timeout`` outlasts the reply deadline (``CONCORD_CHAT_REPLY_DEADLINE``, 25 s): a worker that is
stopped or restarted lets the calls it runs finish and store their replies; a worker that is killed
leaves them to be resumed by the next look at the chat. ``WEB_CONCURRENCY`` sets the number of workers
(gunicorn's own variable; one or two per core)."""
import os

wsgi_app = "config.wsgi"
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
worker_class = "sync"
timeout = 60
graceful_timeout = int(float(os.environ.get("CONCORD_CHAT_REPLY_DEADLINE", "25"))) + 10
keepalive = 5
# gunicorn 27's default control socket path is shared by every gunicorn of the user on the machine
control_socket_disable = True
