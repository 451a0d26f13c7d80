#!/usr/bin/env python3
"""Largest-shape workers for the JSON reader's benchmark (benches/json_reader.sh).

  workers_page.py serve PORT COUNT   a stand-in hub on 127.0.0.1:PORT whose
                                     GET /v1/workers is a page of COUNT
                                     distinct workers of the largest shape the
                                     contract accepts, generated as it is sent
                                     (the stand-in holds one worker at a time);
                                     it serves until killed
  workers_page.py post URL COUNT     COUNT heartbeats of that shape to a real hub
                                     (MAC_HUB_TOKEN: a worker token)

The shape (docs/hub-api.md's bounds): a 128-byte id, a 253-byte host, 64 agents
of 32 characters, 64 capabilities, a last failover with a 200-character detail.
Names are words and digits, never secret-shaped (the hub refuses those).
"""
import datetime
import http.client
import http.server
import json
import os
import socketserver
import sys
import threading
import urllib.parse


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def agents():
    # 64 names of 32 characters: `agent-NN-` padded with words.
    return [("agent-%02d-" % i + "runner-" * 5)[:32] for i in range(64)]


AGENTS = agents()
CAPS = {a: {"binary": True, "token": True, "preflight": "ok"} for a in AGENTS}
DETAIL = ("upstream answered 429 too many requests; retry after sixty seconds. " * 4)[:200]


def worker_id(i):
    return ("worker-%09d-" % i + "rack-east-gpu-" * 10)[:128]


def host(i):
    label = ("node-%09d-" % i + "compute" * 9)[:63]
    return ".".join([label, "a" * 63, "b" * 63, "c" * 61])[:253]


def failover(i, at):
    return {
        "id": ("failover-%09d-" % i + "event-" * 20)[:128],
        "at": at,
        "from": AGENTS[0],
        "to": AGENTS[1],
        "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router", "detail": DETAIL},
    }


def view(i, at):
    """One worker as GET /v1/workers lists it."""
    return {
        "worker": worker_id(i),
        "host": host(i),
        "received_at": at,
        "sent_at": at,
        "state": "healthy",
        "config_revision": "7aec449f90e7",
        "in_sync": True,
        "agents": AGENTS,
        "active_agent": AGENTS[1],
        "capabilities": CAPS,
        "last_failover": failover(i, at),
        "headroom": 62,
    }


def heartbeat(i, at):
    return {
        "worker": worker_id(i),
        "host": host(i),
        "sent_at": at,
        "agents": AGENTS,
        "active_agent": AGENTS[1],
        "capabilities": CAPS,
        "failovers": [failover(i, at)],
    }


def serve(port, count):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_GET(self):
            path = urllib.parse.urlparse(self.path).path
            if path != "/v1/workers":
                self.send_response(404)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
                return
            at = now()
            head = json.dumps({"now": at, "config_revision": "7aec449f90e7",
                               "heartbeat_interval_s": 10, "cursor": "c1-%d" % count,
                               "delta": False})[:-1] + ', "workers": ['
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()

            def chunk(b):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))

            # One worker's JSON with its number as a slot, filled in for
            # each: what json.dumps would write, at a fraction of its cost.
            tmpl = json.dumps(view(0, at)).replace("%", "%%").replace("000000000", "%(i)09d")
            try:
                chunk(head.encode())
                batch = []
                for i in range(count):
                    batch.append(("," if i else "") + tmpl % {"i": i})
                    if len(batch) == 64:
                        chunk("".join(batch).encode())
                        batch = []
                batch.append("]}")
                chunk("".join(batch).encode())
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    Server(("127.0.0.1", port), Handler).serve_forever()


def post(url, count):
    u = urllib.parse.urlparse(url)
    token = os.environ["MAC_HUB_TOKEN"]
    threads = 8
    failed = []

    def run(k):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        for i in range(k, count, threads):
            body = json.dumps(heartbeat(i, now()))
            c.request("POST", "/v1/heartbeats", body,
                      {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                failed.append((i, r.status))
                return

    ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if failed:
        sys.exit("heartbeats refused: %s" % failed[:3])


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("serve", "post"):
        sys.exit(__doc__)
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), int(sys.argv[3]))
    else:
        post(sys.argv[2], int(sys.argv[3]))
