#!/usr/bin/env python3
"""One control call on every replica behind the sandbox router (standard library only).

    python deploy/fanout.py http://127.0.0.1:8080 GET /_mock/sandboxes
    python deploy/fanout.py http://127.0.0.1:8080 DELETE /_mock/sandboxes --token "$MOCKSERVER_CONTROL_TOKEN"

Reads the replicas from the router (`GET /_router/replicas`), sends the call to each through
`/_replicas/{name}{PATH}` and prints one JSON document: {"results": [{"replica", "up", "status", "body"}]}.
A replica that is down is listed with "up": false and the router's error. Exit status 1 when any
replica did not answer 2xx.
"""
import argparse
import json
import sys
import urllib.error
import urllib.request


def send(method, url, token=None, body=None, timeout=30):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def decode(raw):
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


def fanout(router, method, path, token=None, body=None):
    status, raw = send("GET", f"{router}/_router/replicas")
    if status != 200:
        raise SystemExit(f"{router}/_router/replicas answered {status}: is this the sandbox router?")
    results = []
    for replica in json.loads(raw)["replicas"]:
        status, raw = send(method, f"{router}{replica['path']}{path}", token, body)
        results.append({"replica": replica["name"], "up": replica["up"], "status": status, "body": decode(raw)})
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("router", help="URL of the router, e.g. http://127.0.0.1:8080")
    parser.add_argument("method")
    parser.add_argument("path", help="a /_mock path, e.g. /_mock/sandboxes")
    parser.add_argument("--token", help="control token (or none when the replicas have none)")
    parser.add_argument("--body", help="JSON body to send")
    args = parser.parse_args(argv)
    if not args.path.startswith("/"):
        parser.error("path must start with /")
    results = fanout(args.router.rstrip("/"), args.method.upper(), args.path, args.token,
                     args.body.encode() if args.body is not None else None)
    json.dump({"results": results}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0 if all(200 <= r["status"] < 300 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
