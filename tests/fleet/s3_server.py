#!/usr/bin/env python3
"""A real S3 API on loopback for gpuq's fleet tests (started by tests/fleet/s3_server.h).

Usage: s3_server.py PORT [BUCKET...]   (PORT 0: any free port)

Runs moto's server app with request signing enforced: an IAM user with full rights is made in
the process, and its access key is the only one accepted, so a request libcurl signed wrongly
(or with a wrong secret) is refused with 403 as S3 would. Once listening it prints one line,
"ready PORT ACCESS_KEY_ID SECRET_ACCESS_KEY", and flushes stdout. Exits on SIGTERM or when
its stdin reaches end of file (its parent died); with status 77 when moto cannot be imported.

Two changes make moto judge requests as S3 does:
 - moto checks a write's condition (If-None-Match, If-Match) and then writes without a lock,
   while S3 makes conditional writes atomic; the middleware below therefore serves one request
   at a time (the whole response is produced inside the lock), so racing writers see S3's
   semantics;
 - moto checks a signature against the URL as werkzeug rebuilds it, which decodes "%2F" in
   the query, while S3 (and libcurl's signer) use the query as sent: the check is given the
   query as sent.
"""
import json
import logging
import os
import signal
import sys
import threading

# Read by moto.settings at import: check every request's signature from the first one.
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "0"
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

try:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.iam import access_control
    from moto.iam.models import iam_backends
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        create_backend_app,
    )
    from moto.s3.models import s3_backends
    from werkzeug.serving import make_server
except ImportError as e:
    # The harness skips its tests on this status: this machine has no moto server.
    print(f"s3_server.py: python3 cannot import moto's server: {e}", file=sys.stderr)
    sys.exit(77)


# The query of the request being served, as sent (requests are served one at a time).
raw_query = ""
check_request_as_built = access_control.IAMRequestBase.__init__


def check_request_as_sent(self, *args, **kwargs):
    if raw_query and "path" in kwargs:
        kwargs["path"] = kwargs["path"].partition("?")[0] + "?" + raw_query
    check_request_as_built(self, *args, **kwargs)


access_control.IAMRequestBase.__init__ = check_request_as_sent


class OneAtATime:
    """WSGI middleware: one request in the app at a time, its response consumed in the lock."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        global raw_query
        with self.lock:
            raw_query = environ.get("QUERY_STRING", "")
            captured = {}
            chunks = []

            def capture(status, headers, exc_info=None):
                captured["status"] = status
                captured["headers"] = headers
                captured["exc_info"] = exc_info
                return chunks.append

            result = self.app(environ, capture)
            try:
                chunks.extend(result)
                body = b"".join(chunks)
            finally:
                if hasattr(result, "close"):
                    result.close()
        start_response(captured["status"], captured["headers"], captured["exc_info"])
        return [body]


def make_user():
    iam = iam_backends[DEFAULT_ACCOUNT_ID]["global"]
    iam.create_user("us-east-1", "gpuq-test")
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
    }
    iam.put_user_policy("gpuq-test", "everything", json.dumps(policy))
    key = iam.create_access_key("gpuq-test")
    return key.access_key_id, key.secret_access_key


def main():
    if len(sys.argv) < 2:
        print("usage: s3_server.py PORT [BUCKET...]", file=sys.stderr)
        return 2
    port = int(sys.argv[1])
    access_key, secret = make_user()
    for bucket in sys.argv[2:]:
        s3_backends[DEFAULT_ACCOUNT_ID]["aws"].create_bucket(bucket, "us-east-1")

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", port, OneAtATime(app), threaded=True)
    server.daemon_threads = True

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=lambda: (sys.stdin.read(), stop()), daemon=True).start()

    print(f"ready {server.port} {access_key} {secret}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
