# free-port.sh: sourced by what starts a private cluster or service beside
# others on this machine (tests/e2e/e2e-lib.sh,
# deploy/packages/try-packages.sh).
#
# free_port_pair BASE: prints the first P in BASE, BASE+100, ... with P and
# P+1 both free, so that a cluster's slurmctld and slurmd (or a service)
# do not take the ports of a demo cluster or of the same test of another
# build tree running at the same time; exits 1 when there is none.
free_port_pair() {
	python3 - "$1" <<'PY'
import socket, sys
def free(p):
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", p))
        return True
    except OSError:
        return False
    finally:
        s.close()
base = int(sys.argv[1])
for p in range(base, 60000, 100):
    if free(p) and free(p + 1):
        print(p)
        sys.exit(0)
sys.exit(1)
PY
}
