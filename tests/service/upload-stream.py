#!/usr/bin/env python3
"""upload-stream.py URL COUNT CLIENTS ACKFILE: upload COUNT distinct results
(jobs 500000...) from CLIENTS concurrent clients, as agents do: each request
carries a fresh munge credential (`munge -n`, as root = a writer).  Every
acknowledged upload (201 or 200) is appended to ACKFILE at once (flushed),
so a kill -9 of the service at any moment leaves an exact record of what was
acknowledged.  A refused connection is retried (the agent's spool would do
the same) until the deadline.  Prints uploads/s over the acknowledged ones.
"""
import http.client
import json
import subprocess
import sys
import threading
import time
import urllib.parse

url, count, clients, ackfile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
deadline = time.time() + float(sys.argv[5] if len(sys.argv) > 5 else 60)
u = urllib.parse.urlparse(url)
lock = threading.Lock()
ack = open(ackfile, "a")
n_threads = 16
first_ack = [None]
acked = [0]
failures = []


def document(job):
    n = n_threads
    return json.dumps({
        "format": "commap-result", "version": 1,
        "identity": {"job": job, "step": 0, "node": "node1", "user": "root",
                     "uid": 0, "executable": "/opt/apps/stream",
                     "exe_hash": "sha256:01", "argv": ["stream"],
                     "ranks": 1, "threads": n},
        "mode": "dynamic", "backend": "sample",
        "started_at": "2026-11-22T14:00:00Z",
        "ended_at": "2026-11-22T14:00:01Z",
        "topology": {"cpuset": "0-15", "pus": 16},
        "threads": [{"rank": 0, "index": i, "tid": 100 + i} for i in range(n)],
        "edges": [[i, j, float(job % 97 + i + j)]
                  for i in range(n) for j in range(i + 1, n)],
        "timeline": [{"t": 0.1, "pu_of_thread": list(range(n)), "cost": 1.0}],
        "migrations": [], "stats": {"samples": job},
    }).encode()


def upload(job):
    body = document(job)
    while time.time() < deadline:
        cred = subprocess.run(["munge", "-n"], capture_output=True,
                              text=True).stdout.strip()
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
            c.request("POST", "/v1/results", body,
                      {"X-Munge-Credential": cred,
                       "Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            c.close()
        except OSError:
            time.sleep(0.05)        # service down: retry, as the spool does
            continue
        if r.status in (200, 201):
            with lock:
                ack.write("%d %d\n" % (job, r.status))
                ack.flush()
                acked[0] += 1
                if first_ack[0] is None:
                    first_ack[0] = time.time()
            return
        if r.status >= 500:
            time.sleep(0.05)
            continue
        failures.append((job, r.status))
        return
    failures.append((job, "deadline"))


def client(k):
    for i in range(k, count, clients):
        upload(500000 + i)


t0 = time.time()
ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
for t in ts:
    t.start()
for t in ts:
    t.join()
dt = time.time() - t0
print("uploads %d acknowledged %d in %.2f s (%.0f/s incl. credentials and the restart)"
      % (count, acked[0], dt, acked[0] / dt if dt else 0))
if failures:
    print("failures:", failures[:10])
    sys.exit(1)
