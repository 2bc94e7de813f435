"""The deployment files: the Kustomize base renders with kubectl and every object passes the offline
schema check of its Kubernetes version (kubernetes-validate, strict); the committed router
configurations are what deploy/haproxy_cfg.py renders; the compose profile matches them; the container
smoke (.ci/container-smoke) says when it skipped.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from support import ROOT

DEPLOY = ROOT / "deploy"
KUBERNETES = "1.32.0"      # the version the objects are checked against (any of kubernetes-validate's)
KUBECTL = shutil.which("kubectl")


@pytest.fixture(scope="module")
def objects():
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (CI installs Debian's kubernetes-client with .ci/scale-deps)")
    rendered = subprocess.run([KUBECTL, "kustomize", str(DEPLOY / "k8s")], capture_output=True, text=True, timeout=60)
    assert rendered.returncode == 0, rendered.stderr
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in yaml.safe_load_all(rendered.stdout) if doc}


def by_kind(objects, kind):
    found = [doc for (k, _), doc in objects.items() if k == kind]
    assert len(found) == 1, f"{kind}: {len(found)} objects"
    return found[0]


def test_every_rendered_object_passes_the_strict_schema_check(objects):
    validate = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed"
                                   " (.ci/scale-deps installs it: pip install kubernetes-validate)")
    assert {kind for kind, _ in objects} == {"Namespace", "ConfigMap", "Service", "Deployment", "StatefulSet"}
    for doc in objects.values():
        validate.validate(doc, KUBERNETES, strict=True)
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "idp-mock", doc["metadata"]
    broken = dict(by_kind(objects, "StatefulSet"), spec={**by_kind(objects, "StatefulSet")["spec"], "replica": 3})
    with pytest.raises(validate.ValidationError):        # the check does catch a misspelt field
        validate.validate(broken, KUBERNETES, strict=True)


def test_replicas_are_a_statefulset_with_probes_resources_state_volume_and_the_token_from_a_secret(objects):
    replicas = by_kind(objects, "StatefulSet")
    pod = replicas["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["path"] == "/_mock/health"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    env = {item["name"]: item for item in container["env"]}
    assert env["MOCKSERVER_REPLICA"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["MOCKSERVER_CONTROL_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "mockserver-control"
    state = env["MOCKSERVER_STATE_FILE"]["value"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "state"]
    assert state.startswith(mount["mountPath"] + "/")
    assert [claim["metadata"]["name"] for claim in replicas["spec"]["volumeClaimTemplates"]] == ["state"]
    headless = objects[("Service", replicas["spec"]["serviceName"])]
    assert headless["spec"]["clusterIP"] == "None"


def test_the_router_serves_the_rendered_configuration_for_every_replica(objects):
    replicas = by_kind(objects, "StatefulSet")
    router = objects[("Deployment", "mock-router")]
    (volume,) = router["spec"]["template"]["spec"]["volumes"]
    config = objects[("ConfigMap", volume["configMap"]["name"])]["data"]["haproxy.cfg"]
    assert config == (DEPLOY / "k8s" / "haproxy.cfg").read_text()
    servers = re.findall(r"^    server (\S+) (\S+) check", config, re.M)
    name, service = replicas["metadata"]["name"], replicas["spec"]["serviceName"]
    assert servers == [(f"{name}-{n}", f"{name}-{n}.{service}.idp-mock.svc.cluster.local:8080")
                       for n in range(replicas["spec"]["replicas"])]
    (container,) = router["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/_router/health"
    assert container["resources"]["limits"]
    assert objects[("Service", "mock-router")]["spec"]["selector"] == router["spec"]["selector"]["matchLabels"]


def test_committed_router_configurations_are_up_to_date():
    check = subprocess.run([sys.executable, str(DEPLOY / "haproxy_cfg.py"), "--check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_compose_profile_runs_the_router_in_front_of_named_replicas_with_state_files():
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    scale = {name for name, service in services.items() if "scale" in service.get("profiles", [])}
    assert scale == {"mock-0", "mock-1", "mock-router"}
    config = (DEPLOY / "compose-haproxy.cfg").read_text()
    for name in ("mock-0", "mock-1"):
        assert services[name]["environment"]["MOCKSERVER_REPLICA"] == name
        assert services[name]["environment"]["MOCKSERVER_STATE_FILE"].startswith("/srv/mockserver/state/")
        assert f"server {name} {name}:8080 check" in config
    assert "./deploy/compose-haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in services["mock-router"]["volumes"]


# ---------------------------------------------------------------- the container smoke
SKIPPED = 77


def test_the_container_smoke_says_it_skipped_and_exits_77(tmp_path):
    """Where no engine can be had (.ci/docker-engine exits 77), the smoke says SKIPPED and exits 77, never 0; a
    failure of the engine or the build is a failure (1)."""
    script = ROOT / ".ci" / "container-smoke"
    engine = tmp_path / "engine.sh"

    def smoke(code, *command):
        engine.write_text(f"#!/bin/sh\necho 'docker-engine: skipped: no engine in this test' >&2\nexit {code}\n")
        engine.chmod(0o755)
        return subprocess.run(list(command) or [str(script)], cwd=ROOT, capture_output=True, text=True, timeout=30,
                              env={**os.environ, "CONTAINER_SMOKE_ENGINE": str(engine)})
    skipped = smoke(SKIPPED)
    assert skipped.returncode == SKIPPED and "SKIPPED" in skipped.stderr
    for code in (1, 3):
        assert smoke(code).returncode == 1
    made = smoke(SKIPPED, "make", "-s", "container-smoke")
    assert made.returncode != 0 and "SKIPPED" in made.stderr
