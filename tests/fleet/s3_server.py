#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real S3 API on loopback for gpuq's fleet tests (started by tests/fleet/s3_server.h).

Usage: s3_server.py PORT [BUCKET...]   (PORT 0: any free port)

Runs moto's server app with request signing enforced: an IAM user with full rights is made in
the process, and its access key is the only one accepted, so a request libcurl signed wrongly
(or with a wrong secret) is refused with 403 as S3 would. Once listening it prints one line,
"ready PORT ACCESS_KEY_ID SECRET_ACCESS_KEY", and flushes stdout. Exits on SIGTERM or when
its stdin reaches end of file (its parent died); with status 77 when moto cannot be imported.

It counts the requests it serves, by kind, for tests of what the fleet costs: GET /__gpuq_counts
answers them as JSON (without a signature, and without being counted), and POST /__gpuq_counts
sets them back to zero. Kinds: "list" (a GET with list-type=2 in its query: ListObjectsV2),
"get" (every other GET; "not_modified" counts those answered 304), "put", "delete", "head",
"other"; "requests" holds the latest 10,000 as {"t" (seconds since the epoch), "method", "kind",
"key" (the path without the bucket), "status"}.

Two changes make moto judge requests as S3 does:
 - moto checks a write's condition (If-None-Match, If-Match) and then writes without a lock,
   while S3 makes conditional writes atomic; the middleware below therefore serves one request
   at a time (the whole response is produced inside the lock), so racing writers see S3's
   semantics. A request's body is read before the lock is taken, and the response sent after
   it is left, so a slow upload or download does not hold up the requests behind it; parts of
   multipart uploads and ranged GETs, which cannot race a conditional write, are served beside
   the lock, in parallel, as S3 serves them (needs_the_lock);
 - moto checks a signature against the URL as werkzeug rebuilds it, which decodes "%2F" in
   the query, while S3 (and libcurl's signer) use the query as sent: the check is given the
   query as sent.
And moto_at_size.py makes large objects and long listings cost what they cost on S3 (see there).
Each kept request also has "ms": the time moto took to produce its answer, the lock's wait and
the transfers left out.
"""
import contextlib
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time

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

import moto_at_size  # noqa: E402  (after the check that moto is there)

moto_at_size.install()


# The query of the request this thread serves, as sent.
serving = threading.local()
check_request_as_built = access_control.IAMRequestBase.__init__


def check_request_as_sent(self, *args, **kwargs):
    raw_query = getattr(serving, "raw_query", "")
    if raw_query and "path" in kwargs:
        kwargs["path"] = kwargs["path"].partition("?")[0] + "?" + raw_query
    check_request_as_built(self, *args, **kwargs)


access_control.IAMRequestBase.__init__ = check_request_as_sent


COUNTS_PATH = "/__gpuq_counts"
MAX_KEPT_REQUESTS = 10_000


class Counts:
    """What was served, by kind (see the module's doc)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.by_kind = {k: 0 for k in ("get", "not_modified", "put", "list", "delete", "head", "other")}
            self.requests = []

    def add(self, environ, status, seconds):
        method = environ.get("REQUEST_METHOD", "")
        query = environ.get("QUERY_STRING", "")
        code = int(status.split(" ", 1)[0])
        if method == "GET" and "list-type=2" in query.split("&"):
            kind = "list"
        else:
            kind = {"GET": "get", "PUT": "put", "DELETE": "delete", "HEAD": "head"}.get(method, "other")
        # /BUCKET/KEY (path style): the key without its bucket.
        key = environ.get("PATH_INFO", "").lstrip("/").partition("/")[2]
        with self.lock:
            self.by_kind[kind] += 1
            if kind == "get" and code == 304:
                self.by_kind["not_modified"] += 1
            self.requests.append({"t": time.time(), "method": method, "kind": kind, "key": key, "status": code,
                                  "ms": round(seconds * 1000, 3)})
            del self.requests[:-MAX_KEPT_REQUESTS]

    def answer(self, environ, start_response):
        if environ.get("REQUEST_METHOD") == "POST":
            self.reset()
        with self.lock:
            body = json.dumps(dict(self.by_kind, requests=self.requests)).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


BODY_IN_MEMORY = 64 * 1024 * 1024


def read_body_before_the_lock(environ):
    """Reads the request's body now (into memory, or a temporary file above 64 MiB) and gives the
    app the copy, so that the lock is held while moto works, not while the client sends."""
    length = environ.get("CONTENT_LENGTH", "")
    chunked = environ.get("wsgi.input_terminated", False)
    if not length.isdigit() and not chunked:
        return
    body = tempfile.SpooledTemporaryFile(BODY_IN_MEMORY)
    source = environ["wsgi.input"]
    left = int(length) if length.isdigit() else None
    while left is None or left > 0:
        chunk = source.read(min(left, 1 << 20) if left is not None else 1 << 20)
        if not chunk:
            break
        body.write(chunk)
        if left is not None:
            left -= len(chunk)
    body.seek(0)
    environ["wsgi.input"] = body


def needs_the_lock(environ):
    """Whether a request may race a conditional write. Two kinds never do, and S3 serves them in
    parallel with everything else: a part of a multipart upload (a PUT with partNumber and
    uploadId: no object changes until the upload is completed, which takes the lock) and a ranged
    GET (it reads one object's bytes, an If-Match pinning which). Serving them beside the lock
    keeps a claim's renewal from waiting behind a queue of 64 MiB parts."""
    method = environ.get("REQUEST_METHOD", "")
    query = set(key.partition("=")[0] for key in environ.get("QUERY_STRING", "").split("&"))
    if method == "PUT" and {"partNumber", "uploadId"} <= query:
        return False
    if method == "GET" and environ.get("HTTP_RANGE", "").startswith("bytes=") and query <= {""}:
        return False
    return True


class OneAtATime:
    """WSGI middleware: one request in the app at a time, its response consumed in the lock."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.counts = Counts()

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == COUNTS_PATH:
            return self.counts.answer(environ, start_response)
        read_body_before_the_lock(environ)
        with self.lock if needs_the_lock(environ) else contextlib.nullcontext():
            started = time.monotonic()
            serving.raw_query = environ.get("QUERY_STRING", "")
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
            self.counts.add(environ, captured["status"], time.monotonic() - started)
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
