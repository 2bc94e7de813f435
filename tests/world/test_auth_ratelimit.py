"""Authentication (API tokens, JWTs), scopes, tenant isolation and per-token rate limits, over HTTP."""

import base64
import hashlib
import hmac
import json
import math

import pytest
import yaml
from starlette.testclient import TestClient
from support import ROOT
from support.ids import ADMIN, APP, CLUSTER, DEPLOY, ORG, OTHER_ORG, PROJECT, READ, WRITE

OTHER_PROJECT = "4a6c8e0b-2d4f-4a6c-9e0b-2d4f6a8c0e4a"
OTHER_CLUSTER = "9e1c3a5f-7b9d-4e1f-8a3c-5f7b9d1e3a5c"
RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")


@pytest.fixture
def anonymous(server):
    """A client that sends no credentials unless a test passes them."""
    with TestClient(server, base_url="http://mock") as test_client:
        yield test_client


def advance(http, seconds):
    reply = http.post("/_mock/clock/advance", json={"seconds": seconds})
    assert reply.status_code == 200
    return reply.json()["epoch"]


def now(http):
    return http.get("/_mock/clock").json()["epoch"]


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256(claims, secret="mock-jwt-secret"):
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64(json.dumps(claims).encode())
    signature = hmac.new(secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


def bearer(value):
    return {"Authorization": f"Bearer {value}"}


# ---------------------------------------------------------------- authentication
def test_missing_authorization_is_401(anonymous):
    reply = anonymous.get("/organization")
    assert reply.status_code == 401
    assert reply.json()["status"] == 401
    assert "Authorization" in reply.json()["message"]


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Token", "Token   ", "mock-admin-token"])
def test_malformed_authorization_is_401(anonymous, header):
    reply = anonymous.get("/organization", headers={"Authorization": header})
    assert reply.status_code == 401
    assert reply.json()["error"] == "Unauthorized"


def test_unknown_token_is_401(anonymous):
    assert anonymous.get("/organization", headers={"Authorization": "Token no-such-token"}).status_code == 401


@pytest.mark.parametrize("scheme", ["Token", "Bearer"])
def test_api_token_accepted_with_token_and_bearer_scheme(anonymous, scheme):
    reply = anonymous.get("/organization", headers={"Authorization": f"{scheme} mock-read-token"})
    assert reply.status_code == 200
    assert reply.json()["id"] == ORG


# ---------------------------------------------------------------- scopes
def test_read_token_may_get(anonymous):
    assert anonymous.get(f"/project/{PROJECT}", headers=READ).status_code == 200


def test_read_token_may_not_create_a_project(anonymous):
    reply = anonymous.post(f"/organization/{ORG}/project", json={"name": "by-reader"}, headers=READ)
    assert reply.status_code == 403
    assert reply.json()["error"] == "Forbidden"
    names = [p["name"] for p in anonymous.get(f"/organization/{ORG}/project", headers=READ).json()["results"]]
    assert "by-reader" not in names


def test_write_token_may_create_a_project(anonymous):
    reply = anonymous.post(f"/organization/{ORG}/project", json={"name": "by-writer"}, headers=WRITE)
    assert reply.status_code == 201


def test_write_token_may_not_deploy(anonymous):
    assert anonymous.post(f"/application/{APP}/deploy", headers=WRITE).status_code == 403


def test_deploy_token_may_deploy(anonymous):
    reply = anonymous.post(f"/application/{APP}/deploy", headers=DEPLOY)
    assert reply.status_code == 202
    assert reply.json()["status"] == "QUEUED"


def test_deploy_token_may_not_create_a_project(anonymous):
    reply = anonymous.post(f"/organization/{ORG}/project", json={"name": "by-deployer"}, headers=DEPLOY)
    assert reply.status_code == 403


def test_deploy_token_may_read(anonymous):
    assert anonymous.get(f"/application/{APP}", headers=DEPLOY).status_code == 200


# ---------------------------------------------------------------- tenant isolation
@pytest.mark.parametrize("path", [
    f"/project/{OTHER_PROJECT}",
    f"/project/{OTHER_PROJECT}/environment",
    f"/cluster/{OTHER_CLUSTER}",
    f"/organization/{OTHER_ORG}/project",
    f"/organization/{OTHER_ORG}/cluster",
])
def test_ids_of_another_organization_are_404(client, path):
    reply = client.get(path)
    assert reply.status_code == 404
    assert reply.json()["error"] == "Not Found"


def test_writing_under_another_organization_is_404(client):
    assert client.post(f"/organization/{OTHER_ORG}/project", json={"name": "intruder"}).status_code == 404
    assert client.post(f"/project/{OTHER_PROJECT}/environment", json={"name": "intruder"}).status_code == 404
    assert client.delete(f"/project/{OTHER_PROJECT}").status_code == 404


def test_organization_of_a_token_is_its_own(client):
    assert client.get("/organization").json()["id"] == ORG


# ---------------------------------------------------------------- JWT
def test_minted_jwt_works_with_bearer_then_expires_by_the_clock(anonymous):
    minted = anonymous.post("/_mock/tokens", json={"kind": "jwt", "ttl_seconds": 60, "scopes": ["Read"]})
    assert minted.status_code == 201
    jwt = minted.json()["token"]
    assert anonymous.get("/organization", headers=bearer(jwt)).status_code == 200
    advance(anonymous, 61)
    reply = anonymous.get("/organization", headers=bearer(jwt))
    assert reply.status_code == 401
    assert "expired" in reply.json()["message"]


def test_minted_jwt_keeps_its_scopes(anonymous):
    jwt = anonymous.post("/_mock/tokens", json={"kind": "jwt", "ttl_seconds": 60, "scopes": ["Read"]}).json()["token"]
    reply = anonymous.post(f"/organization/{ORG}/project", json={"name": "by-jwt"}, headers=bearer(jwt))
    assert reply.status_code == 403


def test_hand_made_hs256_jwt_is_accepted(anonymous):
    jwt = hs256({"sub": "alice", "exp": int(now(anonymous)) + 300, "org": ORG, "scopes": ["Write"]})
    assert anonymous.get("/organization", headers=bearer(jwt)).json()["id"] == ORG
    created = anonymous.post(f"/organization/{ORG}/project", json={"name": "by-alice"}, headers=bearer(jwt))
    assert created.status_code == 201


def test_jwt_with_wrong_signature_is_401(anonymous):
    jwt = hs256({"sub": "mallory", "exp": int(now(anonymous)) + 300, "org": ORG, "scopes": ["Admin"]},
                secret="not-the-mock-secret")
    assert anonymous.get("/organization", headers=bearer(jwt)).status_code == 401


def test_jwt_with_tampered_claims_is_401(anonymous):
    good = hs256({"sub": "bob", "exp": int(now(anonymous)) + 300, "org": ORG, "scopes": ["Read"]})
    header, _, signature = good.split(".")
    forged = b64(json.dumps({"sub": "bob", "exp": int(now(anonymous)) + 300, "org": ORG,
                             "scopes": ["Admin"]}).encode())
    assert anonymous.get("/organization", headers=bearer(f"{header}.{forged}.{signature}")).status_code == 401


def test_hand_made_jwt_already_expired_is_401(anonymous):
    jwt = hs256({"sub": "carol", "exp": int(now(anonymous)) - 1, "org": ORG, "scopes": ["Read"]})
    reply = anonymous.get("/organization", headers=bearer(jwt))
    assert reply.status_code == 401
    assert "expired" in reply.json()["message"]


def test_jwt_without_exp_is_401(anonymous):
    reply = anonymous.get("/organization", headers=bearer(hs256({"sub": "dave", "org": ORG})))
    assert reply.status_code == 401
    assert "exp" in reply.json()["message"]


def test_jwt_without_sub_is_401(anonymous):
    jwt = hs256({"exp": int(now(anonymous)) + 300, "org": ORG, "scopes": ["Read"]})
    assert anonymous.get("/organization", headers=bearer(jwt)).status_code == 401


def test_jwt_for_an_unknown_organization_is_401(anonymous):
    jwt = hs256({"sub": "erin", "exp": int(now(anonymous)) + 300, "org": "00000000-0000-4000-8000-000000000000"})
    assert anonymous.get("/organization", headers=bearer(jwt)).status_code == 401


def test_jwt_with_a_header_that_is_not_an_object_is_401(anonymous):
    header = b64(b"[1]")
    payload = b64(json.dumps({"sub": "frank", "exp": int(now(anonymous)) + 300}).encode())
    signature = hmac.new(b"mock-jwt-secret", f"{header}.{payload}".encode(), hashlib.sha256).digest()
    reply = anonymous.get("/organization", headers=bearer(f"{header}.{payload}.{b64(signature)}"))
    assert reply.status_code == 401


def test_jwt_org_claim_selects_the_organization(anonymous):
    jwt = hs256({"sub": "gina", "exp": int(now(anonymous)) + 300, "org": OTHER_ORG, "scopes": ["Read"]})
    assert anonymous.get("/organization", headers=bearer(jwt)).json()["id"] == OTHER_ORG
    assert anonymous.get(f"/project/{PROJECT}", headers=bearer(jwt)).status_code == 404
    assert anonymous.get(f"/project/{OTHER_PROJECT}", headers=bearer(jwt)).status_code == 200


def test_minted_api_token_with_ttl_expires_by_the_clock(anonymous):
    minted = anonymous.post("/_mock/tokens", json={"ttl_seconds": 30, "scopes": ["Read"]}).json()
    token = {"Authorization": f"Token {minted['token']}"}
    assert anonymous.get("/organization", headers=token).status_code == 200
    advance(anonymous, 29)
    assert anonymous.get("/organization", headers=token).status_code == 200
    advance(anonymous, 2)
    reply = anonymous.get("/organization", headers=token)
    assert reply.status_code == 401
    assert "expired" in reply.json()["message"]


@pytest.mark.parametrize("body, field", [({"kind": []}, "body.kind"), ({"kind": "apikey"}, "body.kind"),
                                         ({"name": {"a": 1}}, "body.name"), ({"name": 7}, "body.name"),
                                         ({"scope": ["Read"]}, "unknown field(s) scope")])
def test_a_token_request_of_another_shape_is_a_400_and_mints_nothing(anonymous, body, field):
    before = anonymous.get("/_mock/state").json()["tokens"]
    reply = anonymous.post("/_mock/tokens", json=body)
    assert reply.status_code == 400 and field in reply.json()["message"], reply.text
    assert anonymous.get("/_mock/state").json()["tokens"] == before


# ---------------------------------------------------------------- rate limits
@pytest.fixture
def limited(make_server):
    """A mock allowing 3 requests per 60 s per token (the CLI's precedence over the fixtures' default)."""
    server = make_server(rate_limit=3, rate_window=60)
    with TestClient(server, base_url="http://mock") as test_client:
        yield test_client


def test_rate_limit_setting_is_honoured(make_server):
    with TestClient(make_server(rate_limit=3, rate_window=60), base_url="http://mock", headers=ADMIN) as http:
        assert http.get("/organization").headers["X-RateLimit-Limit"] == "3"


def test_calls_within_the_limit_carry_the_rate_headers(limited):
    started = now(limited)
    remaining = []
    for _ in range(3):
        reply = limited.get("/organization", headers=ADMIN)
        assert reply.status_code == 200
        assert reply.headers["X-RateLimit-Limit"] == "3"
        assert reply.headers["X-RateLimit-Reset"] == str(math.ceil(started + 60))
        remaining.append(reply.headers["X-RateLimit-Remaining"])
    assert remaining == ["2", "1", "0"]


def test_call_past_the_limit_is_429_with_retry_after(limited):
    for _ in range(3):
        limited.get("/organization", headers=ADMIN)
    reply = limited.get("/organization", headers=ADMIN)
    assert reply.status_code == 429
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.json()["status"] == 429
    assert reply.json()["error"] == "Too Many Requests"
    assert reply.headers["Retry-After"] == "60"
    assert reply.headers["X-RateLimit-Limit"] == "3"
    assert reply.headers["X-RateLimit-Remaining"] == "0"
    assert int(reply.headers["X-RateLimit-Reset"]) == math.ceil(now(limited) + 60)


def test_retry_after_counts_down_with_the_clock(limited):
    for _ in range(4):
        limited.get("/organization", headers=ADMIN)
    advance(limited, 45)
    reply = limited.get("/organization", headers=ADMIN)
    assert reply.status_code == 429
    assert reply.headers["Retry-After"] == "15"


def test_writes_also_spend_the_budget(limited):
    for index in range(3):
        assert limited.post(f"/organization/{ORG}/project", json={"name": f"p{index}"},
                            headers=ADMIN).status_code == 201
    assert limited.post(f"/organization/{ORG}/project", json={"name": "p3"}, headers=ADMIN).status_code == 429
    names = [p["name"] for p in limited.get(f"/organization/{ORG}/project", headers=READ).json()["results"]]
    assert "p3" not in names


def test_window_past_restores_the_budget(limited):
    for _ in range(4):
        limited.get("/organization", headers=ADMIN)
    advance(limited, 61)
    reply = limited.get("/organization", headers=ADMIN)
    assert reply.status_code == 200
    assert reply.headers["X-RateLimit-Remaining"] == "2"


def test_limits_are_per_token(limited):
    for _ in range(4):
        limited.get("/organization", headers=ADMIN)
    reply = limited.get("/organization", headers=READ)
    assert reply.status_code == 200
    assert reply.headers["X-RateLimit-Remaining"] == "2"


def test_unauthenticated_replies_carry_no_rate_headers(limited):
    reply = limited.get("/organization", headers={"Authorization": "Token nope"})
    assert reply.status_code == 401
    for name in RATE_HEADERS:
        assert name not in reply.headers


def test_unauthenticated_calls_do_not_spend_a_budget(limited):
    for _ in range(5):
        assert limited.get("/organization", headers={"Authorization": "Token nope"}).status_code == 401
    assert limited.get("/organization", headers=ADMIN).headers["X-RateLimit-Remaining"] == "2"


def test_forbidden_replies_carry_rate_headers(limited):
    reply = limited.post(f"/organization/{ORG}/project", json={"name": "nope"}, headers=READ)
    assert reply.status_code == 403
    assert reply.headers["X-RateLimit-Remaining"] == "2"


def test_control_api_and_document_are_not_rate_limited(limited):
    for _ in range(4):
        limited.get("/organization", headers=ADMIN)
    for _ in range(5):
        for path in ("/_mock/clock", "/_mock/health", "/openapi.json"):
            reply = limited.get(path, headers=ADMIN)
            assert reply.status_code == 200, path
            for name in RATE_HEADERS:
                assert name not in reply.headers
    assert limited.get("/organization", headers=ADMIN).status_code == 429


def test_cluster_of_another_org_is_404_to_every_scope(anonymous):
    for headers in (READ, WRITE, DEPLOY, ADMIN):
        assert anonymous.get(f"/cluster/{OTHER_CLUSTER}", headers=headers).status_code == 404
    assert anonymous.get(f"/cluster/{CLUSTER}", headers=READ).status_code == 200


def test_a_token_may_carry_its_own_rate_limit_in_the_fixtures(make_server, tmp_path):
    (tmp_path / "organizations.yaml").write_bytes((ROOT / "fixtures" / "organizations.yaml").read_bytes())
    tokens = yaml.safe_load((ROOT / "fixtures" / "tokens.yaml").read_text())
    tokens["tokens"].append({"name": "ci", "value": "mock-ci-token", "organization": ORG, "scopes": ["Read"],
                             "rate_limit": "2/10s"})
    (tmp_path / "tokens.yaml").write_text(yaml.safe_dump(tokens))
    with TestClient(make_server(fixtures=tmp_path), base_url="http://mock") as http:
        ci = {"Authorization": "Token mock-ci-token"}
        assert [http.get("/organization", headers=ci).status_code for _ in range(3)] == [200, 200, 429]
        assert http.get("/organization", headers=ADMIN).headers["X-RateLimit-Limit"] == "1000"
        advance(http, 10)
        assert http.get("/organization", headers=ci).headers["X-RateLimit-Limit"] == "2"
