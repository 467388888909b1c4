"""The models match the API description: each model's fields are its schema's properties in docs/openapi.json (the
JSON the server serves, generated from docs/openapi.yaml), each Literal its schema's enum, and every object schema of
the description has a model, so a field added to, renamed in or dropped from the API fails here until models.py
follows. Reads the file only: no server is needed beyond the suite's own."""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Any, Dict, Set, get_args

import pytest

from loci_client import models

SPEC = json.loads((pathlib.Path(__file__).resolve().parents[3] / "docs" / "openapi.json").read_text(encoding="utf-8"))
SCHEMAS: Dict[str, Any] = SPEC["components"]["schemas"]

# model -> the schema it is (request bodies and responses).
MODELS = {
    models.Permissions: "Permissions",
    models.Policy: "Policy",
    models.ArtifactInput: "ArtifactInput",
    models.IngestRequest: "IngestRequest",
    models.BatchIngestRequest: "BatchIngestRequest",
    models.ContextPackRequest: "ContextPackRequest",
    models.ContextPackV2Request: "V2ContextPackRequest",
    models.FeedbackRequest: "FeedbackRequest",
    models.RegisterRequest: "RegisterRequest",
    models.PlanChangeRequest: "PlanChangeRequest",
    models.WorkspaceSettingsChange: "WorkspaceSettingsChange",
    models.Registration: "RegisterResponse",
    models.KeyCreated: "KeyCreated",
    models.KeyInfo: "KeyInfo",
    models.KeyList: "KeyList",
    models.KeyRevoked: "KeyRevoked",
    models.IngestResult: "IngestResponse",
    models.Span: "Span",
    models.Artifact: "Artifact",
    models.ArtifactStatus: "ArtifactStatus",
    models.ArtifactErased: "ArtifactErased",
    models.Citation: "Citation",
    models.ClaimRef: "ClaimRef",
    models.Conflict: "Conflict",
    models.ContextPack: "ContextPackResponse",
    models.Snippet: "Snippet",
    models.V2TokenAccounting: "V2TokenAccounting",
    models.ContextPackV2: "V2ContextPackResponse",
    models.FeedbackResult: "FeedbackResponse",
    models.ReceiptSummary: "ReceiptSummary",
    models.ReceiptPage: "ReceiptList",
    models.ChannelContribution: "ChannelContribution",
    models.Exclusion: "Exclusion",
    models.TokenAccounting: "TokenAccounting",
    models.Receipt: "Receipt",
    models.WorkspaceErased: "WorkspaceErased",
    models.WorkspaceSummary: "WorkspaceSummary",
    models.WorkspaceList: "WorkspaceList",
    models.ArtifactSummary: "ArtifactSummary",
    models.ArtifactPage: "ArtifactList",
    models.WorkspaceSettings: "WorkspaceSettings",
    models.Plan: "Plan",
    models.PlanList: "PlanList",
    models.TenantPlan: "TenantPlan",
    models.TenantList: "TenantList",
    models.Usage: "Usage",
    models.BatchIngested: "BatchIngested",
    models.BatchIngestResult: "BatchIngestResponse",
    models.QueuedJob: "QueuedJob",
    models.BatchQueued: "BatchIngestQueued",
    models.Job: "Job",
}

# Health is both health schemas in one model.
MERGED = {models.Health: ("HealthOK", "HealthUnavailable")}

# Fields a model has beyond its schema, or lacks, on purpose.
CLIENT_ONLY = {models.IngestResult: {"idempotent_replay"}}  # from the Idempotent-Replay header
LEFT_OUT = {models.ArtifactInput: {"workspace_id", "actor_id"}}  # a batch item's are the batch's

# Object schemas no model stands for, and why.
NO_MODEL = {
    "PolicySummary": "Receipt.policy_summary is the applied policy as a dict",
    "JSONRPCMessage": "MCP messages: the client does not speak MCP",
    "Error": "errors become LociAPIError with detail and request_id",
    "Metadata": "a free map of strings: Dict[str, str]",
    "MetadataOut": "a free map of strings: Dict[str, str]",
}

# model of query parameters -> (path, method) whose query parameters it holds.
QUERIES = {
    models.ArtifactListQuery: ("/v1/workspaces/{workspace_id}/artifacts", "get"),
    models.ReceiptListQuery: ("/v1/receipts", "get"),
    models.UsageQuery: ("/v1/billing/usage", "get"),
}

# Literal -> its enum schema.
LITERALS = {
    "ArtifactType": "ArtifactType",
    "PlanName": "PlanName",
    "FeedbackAction": "FeedbackAction",
    "IndexStatus": "IndexStatus",
    "EmbeddingState": "EmbeddingState",
    "JobStatus": "JobStatus",
    "ExclusionReason": "ExclusionReason",
}


def resolve(schema: Dict[str, Any]) -> Dict[str, Any]:
    """A schema or parameter, its $ref followed (#/components/<kind>/<name>)."""
    ref = schema.get("$ref")
    if ref:
        _, _, kind, name = ref.split("/")
        return SPEC["components"][kind][name]
    return schema


def properties(name: str) -> Set[str]:
    """The property names of a schema, its allOf parts included."""
    schema = SCHEMAS[name]
    out: Set[str] = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        part = resolve(part)
        out |= set(part.get("properties", {}))
    return out


def fields(model: type) -> Set[str]:
    return {f.name for f in dataclasses.fields(model) if f.name != "raw"}


@pytest.mark.parametrize("model", list(MODELS), ids=lambda m: m.__name__)
def test_model_fields_are_the_schema_properties(model: type) -> None:
    schema = MODELS[model]
    got = fields(model) - CLIENT_ONLY.get(model, set())
    want = properties(schema) - LEFT_OUT.get(model, set())
    assert got == want, (
        f"{model.__name__} vs schema {schema}: missing {sorted(want - got)}, not in the API {sorted(got - want)}"
    )


def test_health_has_both_schemas_fields() -> None:
    for model, names in MERGED.items():
        want: Set[str] = set()
        for n in names:
            want |= properties(n)
        assert fields(model) == want


@pytest.mark.parametrize("model", list(QUERIES), ids=lambda m: m.__name__)
def test_query_models_are_the_operation_parameters(model: type) -> None:
    path, method = QUERIES[model]
    op = SPEC["paths"][path][method]
    params = [resolve(p) for p in op.get("parameters", []) + SPEC["paths"][path].get("parameters", [])]
    want = {p["name"] for p in params if p.get("in") == "query"}
    assert fields(model) == want


@pytest.mark.parametrize("literal", list(LITERALS))
def test_literals_are_the_enums(literal: str) -> None:
    assert list(get_args(getattr(models, literal))) == SCHEMAS[LITERALS[literal]]["enum"]


def test_every_object_schema_has_a_model() -> None:
    covered = set(MODELS.values()) | set(NO_MODEL)
    for names in MERGED.values():
        covered |= set(names)
    objects = {n for n, s in SCHEMAS.items() if s.get("type") == "object" or "allOf" in s}
    assert objects - covered == set(), "schemas without a model in loci_client.models (or a reason in NO_MODEL)"
