#!/usr/bin/env python3
"""Render the HAProxy configuration of the sandbox router (standard library only).

    python deploy/haproxy_cfg.py --bind 127.0.0.1:8080 mock-0=127.0.0.1:18081 mock-1=127.0.0.1:18082
    python deploy/haproxy_cfg.py --check    # the committed renderings (k8s, compose) are up to date
    python deploy/haproxy_cfg.py --write    # rewrite them

Placement: every request gets a routing key, the sandbox name from the `/sandbox/{name}` prefix, the
`X-Mock-Sandbox` header or the `/_mock/sandboxes/{name}` control path, else `default`. Backend `ring`
hashes the key (consistent hashing) over one hop per replica. Those hops have no health check, so
the ring never changes when a replica dies: a sandbox is never moved to a replica that does not hold
it. Each hop is a small internal frontend in front of its replica's backend, which is health-checked on
`/_mock/health`; while that replica is down the hop answers the JSON error itself.
`/_replicas/{name}/...` reaches one replica directly (prefix stripped), `/_router/replicas` lists the
replicas and their health, `/_router/health` is the router's own liveness.
"""
import argparse
import sys
from pathlib import Path

DEPLOY = Path(__file__).resolve().parent
# Files rendered from this script and committed: path -> arguments.
COMMITTED = {
    DEPLOY / "k8s" / "haproxy.cfg": [
        "--bind", ":8080", "--resolvers", "parse-resolv-conf", "--hop-prefix", "mockhop",
        *(f"mock-{n}=mock-{n}.mock.idp-mock.svc.cluster.local:8080" for n in range(3))],
    DEPLOY / "compose-haproxy.cfg": [
        "--bind", ":8080", "--resolvers", "127.0.0.11:53", "--hop-prefix", "mockhop",
        *(f"mock-{n}=mock-{n}:8080" for n in range(2))],
}

# The routing key, set the same way in the front door and in each hop (a variable does not cross the hop).
KEY_RULES = """\
    http-request set-var(txn.sandbox) str(default)
    http-request set-var(txn.sandbox) req.fhdr(x-mock-sandbox) if { req.fhdr(x-mock-sandbox) -m found }
    http-request set-var(txn.sandbox) path,url_dec,field(3,/) if { path,url_dec -m beg /sandbox/ }
    http-request set-var(txn.sandbox) path,url_dec,field(4,/) if { path,url_dec -m reg ^/_mock/sandboxes/[^/]+ }
    http-request set-var(txn.sandbox) path,url_dec,field(6,/) if { path,url_dec -m reg ^/sandbox/[^/]+/_mock/sandboxes/[^/]+ }"""


def error_body(message):
    """An HAProxy log-format string of the platform's error envelope."""
    return "'{\"status\":503,\"error\":\"Service Unavailable\",\"message\":\"" + message + "\"}'"


def render(replicas, bind, resolvers=None, hop_prefix="mockhop", check_interval="1s", log_level="warning"):
    """replicas: list of (name, "host:port"). Returns the configuration text."""
    # health changes go to stderr anyway (haproxy -db); "info" adds one access-log line per request
    global_log = "    log stdout format raw local0 info\n" if log_level == "info" else ""
    out = [f"""\
# Sandbox router of the IDP mock server, rendered by deploy/haproxy_cfg.py: do not edit by hand.
global
    maxconn 4096
{global_log}
defaults
    mode http
    log global
    option httplog
    option dontlognull
    timeout connect 500ms
    timeout client 60s
    timeout server 60s
    timeout http-request 10s
    retries 1   # a refused connection is retried once, after at most `timeout connect`
    # a replica that refuses the connection (not yet seen down by the health check): same JSON error
    http-error status 503 content-type application/json lf-string {error_body("replica %[var(txn.replica)] serving sandbox %[var(txn.sandbox),json(utf8s)] is down")}
    http-error status 502 content-type application/json lf-string '{{"status":502,"error":"Bad Gateway","message":"replica %[var(txn.replica)] serving sandbox %[var(txn.sandbox),json(utf8s)] gave no valid reply"}}'
    http-error status 504 content-type application/json lf-string '{{"status":504,"error":"Gateway Timeout","message":"replica %[var(txn.replica)] serving sandbox %[var(txn.sandbox),json(utf8s)] did not answer in time"}}'

"""]
    if resolvers:
        source = "parse-resolv-conf" if resolvers == "parse-resolv-conf" else f"nameserver dns {resolvers}"
        out.append(f"""\
resolvers dns
    {source}
    hold valid 5s
    hold obsolete 10s

""")
    listing = ",".join(
        f'{{"name":"{name}","up":%[srv_is_up(replica_{name}/{name}),iif(true,false)],'
        f'"path":"/_replicas/{name}"}}' for name, _ in replicas)
    out.append(f"""\
frontend router
    bind {bind}
    monitor-uri /_router/health
{KEY_RULES}
    http-request return status 200 content-type application/json lf-string '{{"replicas":[{listing}]}}' if {{ path /_router/replicas }}
    default_backend ring

backend ring
    # consistent hashing of the routing key; hops are never checked, so the ring stays as configured;
    # the ring depends on each server's id and weight (100: more points on the ring, a more even spread)
    balance hash var(txn.sandbox)
    hash-type consistent sdbm avalanche
""")
    for name, _ in replicas:
        out.append(f"    use-server {name} if {{ path_beg /_replicas/{name}/ }} || {{ path /_replicas/{name} }}\n")
    for n, (name, _) in enumerate(replicas, start=1):
        out.append(f"    server {name} abns@{hop_prefix}-{name} id {n} weight 100\n")
    dns = " resolvers dns init-addr last,libc,none" if resolvers else ""
    for name, address in replicas:
        out.append(f"""
frontend hop_{name}
    bind abns@{hop_prefix}-{name}
{KEY_RULES}
    http-request set-var(txn.replica) str({name})
    http-request return status 503 content-type application/json lf-string {error_body(f"replica {name} is down")} if {{ nbsrv(replica_{name}) lt 1 }} {{ path_beg /_replicas/ }}
    http-request return status 503 content-type application/json lf-string {error_body(f"replica {name} serving sandbox %[var(txn.sandbox),json(utf8s)] is down")} if {{ nbsrv(replica_{name}) lt 1 }}
    http-request set-path %[path,regsub(^/_replicas/[^/]+,)] if {{ path_beg /_replicas/{name}/ }}
    http-request set-path / if {{ path /_replicas/{name} }}
    default_backend replica_{name}

backend replica_{name}
    option httpchk GET /_mock/health
    http-check expect status 200
    server {name} {address} check inter {check_interval} fall 2 rise 1{dns}
""")
    return "".join(out)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("replicas", nargs="*", metavar="NAME=HOST:PORT")
    parser.add_argument("--bind", default="127.0.0.1:8080", help="address of the router (default 127.0.0.1:8080)")
    parser.add_argument("--resolvers", help="DNS for replica names at run time: HOST:PORT or parse-resolv-conf")
    parser.add_argument("--hop-prefix", default="mockhop",
                        help="name prefix of the internal sockets (unique per router on one machine)")
    parser.add_argument("--check-interval", default="1s")
    parser.add_argument("--log-level", default="warning", help="warning (health changes) or info (also every request)")
    parser.add_argument("--check", action="store_true", help="compare the committed rendered files")
    parser.add_argument("--write", action="store_true", help="rewrite the committed rendered files")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    if args.check or args.write:
        stale = []
        for path, arguments in COMMITTED.items():
            text = main_text(parse(arguments))
            if args.write:
                path.write_text(text)
            elif not path.exists() or path.read_text() != text:
                stale.append(str(path))
        if stale:
            sys.exit("out of date (run python deploy/haproxy_cfg.py --write): " + ", ".join(stale))
        return
    sys.stdout.write(main_text(args))


def main_text(args):
    replicas = []
    for item in args.replicas:
        name, _, address = item.partition("=")
        if not name or not address:
            sys.exit(f"replica {item!r}: expected NAME=HOST:PORT")
        replicas.append((name, address))
    if not replicas:
        sys.exit("no replica given")
    return render(replicas, args.bind, args.resolvers, args.hop_prefix, args.check_interval, args.log_level)


if __name__ == "__main__":
    main()
