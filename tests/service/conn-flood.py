#!/usr/bin/env python3
"""conn-flood.py: hold many hostile connections open against a
commap-service and probe /healthz meanwhile (tests/service/t0680-hostile.sh,
tests/bench/service/run-flood.sh).

  conn-flood.py --port P --pid PID [--idle N] [--trickle N] [--bodies N]
                [--body-bytes B] [--body-path PATH] [--sources K] [--hold S]

Connections come from 127.0.0.2 .. 127.0.0.(K+1) (any 127/8 address is
this host), so that probes from 127.0.0.1 are another client.  Idle
connections send nothing; trickling ones send a request's first line and
then one header byte per second (slowloris); "bodies" announce and send B
bytes of body to PATH, without a credential unless --creds gives them.  While they are held, /healthz
is asked from 127.0.0.1 every 0.2 s.  Prints one JSON object: what was
opened, what the service answered (status codes) or closed, the probes'
outcomes and latencies (s),
and the service's RSS (kB) before, at most and after.
"""
import argparse
import json
import socket
import time


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def connect(port, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s


def check_peer(c):
    """Has the service answered (its status kept) or closed the connection?"""
    try:
        data = c["s"].recv(65536, socket.MSG_PEEK)
    except BlockingIOError:
        return False
    except OSError:
        return True
    if data.startswith(b"HTTP/1.1 ") and len(data) >= 12:
        c["status"] = data[9:12].decode()
    return data == b"" or "status" in c


def probe(port):
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        ok = data.startswith(b"HTTP/1.1 200")
    except OSError:
        ok = False
    return ok, time.monotonic() - t0


def send_some(s, data):
    try:
        return s.send(data)
    except BlockingIOError:
        return 0
    except OSError:
        return -1


def open_all(a, kinds):
    conns, refused = [], 0
    for i, kind in enumerate(kinds):
        src = "127.0.0.%d" % (2 + i % a.sources)
        try:
            s = connect(a.port, src)
        except OSError:
            refused += 1
            continue
        c = {"kind": kind, "s": s, "closed": False, "sent": 0}
        cred = a.creds.pop(0) if kind == "body" and a.creds else None
        if kind == "trickle":
            send_some(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        elif kind == "body":
            head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    "application/json\r\nContent-Length: %d\r\n%s\r\n"
                    % (a.body_path, a.body_bytes,
                       "X-Munge-Credential: %s\r\n" % cred if cred else "")
                    ).encode()
            send_some(s, head)
        conns.append(c)
    return conns, refused


def feed(a, conns, chunk, tick):
    for c in conns:
        if c["closed"]:
            continue
        if check_peer(c):
            c["closed"] = True
            continue
        if c["kind"] == "trickle" and tick:
            if send_some(c["s"], b"a") < 0:
                c["closed"] = True
        elif c["kind"] == "body" and c["sent"] < a.body_bytes:
            n = send_some(c["s"], chunk[:a.body_bytes - c["sent"]])
            if n < 0:
                c["closed"] = True
            else:
                c["sent"] += n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--idle", type=int, default=0)
    p.add_argument("--trickle", type=int, default=0)
    p.add_argument("--bodies", type=int, default=0)
    p.add_argument("--body-bytes", type=int, default=15 << 20)
    p.add_argument("--body-path", default="/healthz")
    p.add_argument("--sources", type=int, default=8)
    p.add_argument("--hold", type=float, default=5.0)
    p.add_argument("--creds", help="a file of munge credentials, one a "
                   "line: one per body connection (uploads as their user)")
    a = p.parse_args()
    a.creds = open(a.creds).read().split() if a.creds else []

    rss0 = rss_kb(a.pid)
    kinds = (["idle"] * a.idle + ["trickle"] * a.trickle +
             ["body"] * a.bodies)
    conns, refused = open_all(a, kinds)
    # Whether the service took each connection shows after a moment.
    time.sleep(0.5)
    chunk = b" " * (256 << 10)
    rss_max, lat, fails = rss0, [], 0
    t_end = time.monotonic() + a.hold
    next_tick = next_probe = time.monotonic()
    while time.monotonic() < t_end:
        now = time.monotonic()
        tick = now >= next_tick
        if tick:
            next_tick = now + 1.0
        feed(a, conns, chunk, tick)
        if now >= next_probe:
            ok, dt = probe(a.port)
            lat.append(dt)
            fails += not ok
            next_probe = time.monotonic() + 0.2
        rss_max = max(rss_max, rss_kb(a.pid))
        time.sleep(0.01)
    closed = {}
    for c in conns:
        if not c["closed"] and check_peer(c):
            c["closed"] = True
        if c["closed"]:
            closed[c["kind"]] = closed.get(c["kind"], 0) + 1
    statuses = {}
    for c in conns:
        if "status" in c:
            k = statuses.setdefault(c["kind"], {})
            k[c["status"]] = k.get(c["status"], 0) + 1
    held = {}
    for c in conns:
        if not c["closed"]:
            held[c["kind"]] = held.get(c["kind"], 0) + 1
    for c in conns:
        c["s"].close()
    lat.sort()
    print(json.dumps({
        "opened": len(conns), "refused_at_connect": refused,
        "closed_by_service": closed, "answers": statuses,
        "held_to_the_end": held,
        "probes": len(lat), "probe_failures": fails,
        "probe_median_s": round(lat[len(lat) // 2], 4) if lat else None,
        "probe_max_s": round(lat[-1], 4) if lat else None,
        "rss_kb_before": rss0, "rss_kb_max": rss_max,
        "rss_kb_after": rss_kb(a.pid),
    }))


if __name__ == "__main__":
    main()
