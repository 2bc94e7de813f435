"""Webhook delivery: deployment events POSTed to every matching registered webhook.

A delivery is queued when its event happens (on the mock's clock) and attempted by
`pump(now)` in a background task, so a slow or dead receiver never delays an API reply.
A reply other than 2xx, or no reply, schedules another attempt after a backoff measured
on the mock's clock (1, 2, 4, 8 s ... up to MAX_ATTEMPTS). Each attempt is recorded:
time, status or error, duration. With a webhook secret, the request carries
`X-Mock-Signature: sha256=HMAC(secret, "<timestamp>.<body>")` and `X-Mock-Timestamp`.
"""

import asyncio
import heapq
import hashlib
import hmac
import time
from collections import deque

import orjson

from .clock import iso

MAX_ATTEMPTS = 5
BACKOFF = (1, 2, 4, 8, 16)
TIMEOUT = 5.0
KEEP = 10000


# an event and the names webhooks may subscribe to it with (the spec's, then the platform's other names)
SYNONYMS = {"DEPLOYMENT_SUCCEEDED": ("DEPLOYMENT_SUCCEEDED", "DEPLOYMENT_SUCCESSFUL"),
            "DEPLOYMENT_FAILED": ("DEPLOYMENT_FAILED", "DEPLOYMENT_FAILURE")}


def sign(secret, timestamp, body):
    return "sha256=" + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


class Webhooks:
    def __init__(self, rt):
        self.rt = rt
        self.deliveries = deque(maxlen=KEEP)
        self.pending = []                      # heap of (due, order, delivery, secret)
        self.forced_failures = []              # [remaining, rule name] from scenarios
        self.tasks = set()
        self.by_cause = {}                     # call id -> delivery ids, for the journal
        self.next_id = 1
        self._client = None

    # ------------------------------------------------------------ events
    def on_deployment_event(self, event, request, at):
        if request.service_type is None or request.action != "DEPLOY":
            return                             # events concern deployments of services (spec, Events)
        payload = self.rt.deployments.event_payload(event, request, at)
        self.emit(request.org, event, payload, request.call_id, at)

    def emit(self, org, event, payload, cause, at):
        for entry in self.rt.store.webhooks.under(org):
            hook = entry.data
            subscribed = [name for name in hook["events"] if name in SYNONYMS.get(event, (event,))]
            if not hook["enabled"] or not subscribed:
                continue
            delivery = {                       # delivered under the name the webhook subscribed with
                "id": self.next_id, "webhook_id": hook["id"], "event_type": subscribed[0],
                "target_url": hook["target_url"],
                "payload": payload, "caused_by_call": cause, "created_at": iso(at), "status": "PENDING",
                "next_attempt_at": iso(at), "attempts": [],
            }
            self.next_id += 1
            if len(self.deliveries) == KEEP:      # the oldest delivery is about to be dropped
                oldest = self.deliveries[0]
                siblings = self.by_cause.get(oldest["caused_by_call"], [])
                siblings.remove(oldest["id"])
                if not siblings:
                    del self.by_cause[oldest["caused_by_call"]]
            self.deliveries.append(delivery)
            self.by_cause.setdefault(cause, []).append(delivery["id"])
            self._queue(at, delivery, (entry.private or {}).get("target_secret"))

    def __getstate__(self):
        """Saved with the world: deliveries and what is pending, not the event loop's tasks or client,
        nor the reference back to the world (the world sets it when it is read back)."""
        state = dict(self.__dict__)
        state["tasks"], state["_client"], state["rt"] = set(), None, None
        return state

    def _queue(self, due, delivery, secret):
        """An attempt due at `due` on the mock's clock (a heap: the earliest first, then in order queued)."""
        heapq.heappush(self.pending, (due, delivery["id"] * MAX_ATTEMPTS + len(delivery["attempts"]), delivery,
                                      secret))

    def fail_next(self, count, rule):
        self.forced_failures.append([count, rule])

    # ------------------------------------------------------------ attempts
    def pump(self, now):
        if not self.pending:
            return
        if self.pending[0][0] > now:
            return
        loop = asyncio.get_running_loop()
        while self.pending and self.pending[0][0] <= now:
            _, _, delivery, secret = heapq.heappop(self.pending)
            task = loop.create_task(self._attempt(delivery, secret))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _attempt(self, delivery, secret):
        clock = self.rt.clock
        attempt = {"number": len(delivery["attempts"]) + 1, "at": iso(clock.now()), "signature": None}
        started = time.perf_counter()
        forced = next((item for item in self.forced_failures if item[0] > 0), None)
        if forced is not None:
            forced[0] -= 1
            attempt.update(status_code=None, error=f"failed by scenario rule {forced[1]}")
        else:
            body = orjson.dumps({"event_type": delivery["event_type"], "payload": delivery["payload"]})
            timestamp = str(int(clock.now()))
            headers = {"Content-Type": "application/json", "User-Agent": "idp-mockserver-webhooks/1",
                       "X-Mock-Event": delivery["event_type"], "X-Mock-Delivery": str(delivery["id"]),
                       "X-Mock-Timestamp": timestamp}
            if secret:
                headers["X-Mock-Signature"] = sign(secret, timestamp, body)
            attempt["signature"] = headers.get("X-Mock-Signature")
            try:
                response = await self._http().post(delivery["target_url"], content=body, headers=headers)
                attempt.update(status_code=response.status_code, error=None)
            except Exception as exc:            # any transport failure is a failed attempt, never a crash
                attempt.update(status_code=None, error=f"{type(exc).__name__}: {exc}".strip())
        attempt["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        delivery["attempts"].append(attempt)
        code = attempt["status_code"]
        delivery["next_attempt_at"] = None
        if code is not None and 200 <= code < 300:
            delivery["status"] = "DELIVERED"
        elif attempt["number"] >= MAX_ATTEMPTS:
            delivery["status"] = "FAILED"
        else:
            delivery["status"] = "RETRYING"
            due = clock.now() + BACKOFF[attempt["number"] - 1]
            delivery["next_attempt_at"] = iso(due)
            self._queue(due, delivery, secret)

    def _http(self):
        if self._client is None:
            import httpx
            self._client = httpx.AsyncClient(timeout=TIMEOUT)
        return self._client

    def stop(self):
        """Cancel the attempts in flight and close the HTTP client in the background (a retired world)."""
        for task in list(self.tasks):
            task.cancel()
        client, self._client = self._client, None
        if client is not None:
            try:
                asyncio.get_running_loop().create_task(client.aclose())
            except RuntimeError:                # no loop (in-process tests): nothing is in flight
                pass

    async def close(self):
        for task in list(self.tasks):
            task.cancel()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ------------------------------------------------------------ reading
    def caused_by(self, call_id):
        return self.by_cause.get(call_id, [])

