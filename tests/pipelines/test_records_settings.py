"""Records (visibility, hashing, schema) and settings resolution."""

import json

import msgspec
import pytest

from pipelines.records import (
    Event,
    Identity,
    MemoryItem,
    Scope,
    item_content_hash,
    json_schemas,
    stable_id,
)
from pipelines.settings import Settings, load_settings, set_flag


def test_scope_visibility_by_kind():
    alice_s1 = Identity(user_id="alice", project_id="p", session_id="s1")
    alice_s2 = Identity(user_id="alice", project_id="p", session_id="s2")
    bob_s1 = Identity(user_id="bob", project_id="p", session_id="s1")
    bob_other = Identity(user_id="bob", project_id="q", session_id="s1")
    session = Scope.for_identity("session", alice_s1)
    project = Scope.for_identity("project", alice_s1)
    user = Scope.for_identity("user", alice_s1)
    assert session.visible_to(alice_s1) and not session.visible_to(alice_s2)
    assert not session.visible_to(bob_s1)  # same session id, other user
    assert project.visible_to(bob_s1) and not project.visible_to(bob_other)
    assert user.visible_to(alice_s2) and not user.visible_to(bob_s1)
    assert Scope(kind="org").visible_to(bob_other)
    assert Scope(kind="org", org_id="acme").visible_to(bob_other) is False


def test_partition_keys_separate_owners():
    a = Scope.for_identity("user", Identity(user_id="a"))
    b = Scope.for_identity("user", Identity(user_id="b"))
    assert a.partition_key() != b.partition_key()
    assert Scope.for_identity("project", Identity(user_id="a")).partition_key() == \
        Scope.for_identity("project", Identity(user_id="b")).partition_key()


def test_item_hash_and_stable_ids():
    item = MemoryItem(id="x", tier="stm", type="fact", title="T", content="C", scope=Scope())
    assert item.content_hash == item_content_hash("T", "C")
    assert stable_id("mem", "e1") == stable_id("mem", "e1") != stable_id("mem", "e2")
    # Round trip through JSON keeps every field.
    again = msgspec.json.decode(msgspec.json.encode(item), type=MemoryItem)
    assert again == item


def test_unknown_fields_rejected_on_items():
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"id": "x", "tier": "stm", "type": "fact", "title": "", "content": "",
                         "scope": {}, "colour": "red"}, MemoryItem)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"id": "x", "tier": "xtm", "type": "fact", "title": "", "content": "",
                         "scope": {}}, MemoryItem)


def test_event_hash_covers_payload():
    a = Event(event_id="e", kind="turn", identity=Identity(), payload={"text": "a"})
    b = Event(event_id="e", kind="turn", identity=Identity(), payload={"text": "b"})
    assert a.sha256 != b.sha256 and len(a.sha256) == 64


def test_json_schema_export_names_every_record():
    schemas = json_schemas()
    assert {"MemoryItem", "Event", "Verdict", "ProposedItem"} <= set(schemas["records"])
    item_schema = schemas["$defs"]["MemoryItem"]
    assert {"importance", "valid_from", "valid_to", "scope"} <= set(item_schema["properties"])
    json.dumps(schemas)  # serialisable


def test_settings_precedence(tmp_path):
    cfg = tmp_path / "loci.toml"
    cfg.write_text('recall_k = 7\nembedder = "hash"\n[flags]\ncontext_injection = false\n')
    s = load_settings(cfg, environ={"LOCI_RECALL_K": "12", "LOCI_AUTO_PROMOTE_TYPES": "decision,fact"})
    assert s.embedder == "hash"  # file
    assert s.recall_k == 12  # env beats file
    assert s.auto_promote_types == ["decision", "fact"]
    assert s.flags["context_injection"] is False and s.flags["enabled"] is True  # merged
    assert load_settings(cfg, environ={}, recall_k=3).recall_k == 3  # explicit beats all
    assert load_settings(tmp_path / "none.toml", environ={}).recall_k == Settings().recall_k


def test_settings_reject_unknown_keys(tmp_path):
    cfg = tmp_path / "loci.toml"
    cfg.write_text("recal_k = 7\n")
    with pytest.raises(msgspec.ValidationError):
        load_settings(cfg, environ={})


def test_ollama_host_env(tmp_path):
    s = load_settings(tmp_path / "none.toml", environ={"OLLAMA_HOST": "10.0.0.5:11434"})
    assert s.ollama_host == "http://10.0.0.5:11434"


def test_set_flag_persists_and_keeps_other_settings(tmp_path):
    cfg = tmp_path / "loci.toml"
    cfg.write_text("# mine\nrecall_k = 4\n")
    set_flag("context_injection", False, cfg)
    s = load_settings(cfg, environ={})
    assert s.flags["context_injection"] is False and s.recall_k == 4
    assert "# mine" in cfg.read_text()
    set_flag("context_injection", True, cfg)
    assert load_settings(cfg, environ={}).flags["context_injection"] is True


def test_orgs_are_separate_tenants_even_when_they_reuse_user_ids() -> None:
    from pipelines.records import Identity, Scope

    ann_acme = Identity(user_id="ann", project_id="atlas", session_id="s1", org_id="acme")
    ann_globex = Identity(user_id="ann", project_id="atlas", session_id="s1", org_id="globex")
    for kind in ("session", "project", "user", "org"):
        scope = Scope.for_identity(kind, ann_acme)
        assert scope.visible_to(ann_acme), kind
        assert not scope.visible_to(ann_globex), kind
    # The audience key is also the clustering partition: nothing merges across audiences.
    assert Scope.for_identity("user", ann_acme).partition_key() == "user:acme/ann"
    assert Scope.for_identity("session", ann_acme).partition_key() == "session:acme/ann/s1"


def test_settings_name_a_known_time_zone(tmp_path):
    assert load_settings(tmp_path / "none.toml", environ={"LOCI_TIMEZONE": "Asia/Tokyo"}).timezone == "Asia/Tokyo"
    with pytest.raises((ValueError, msgspec.ValidationError), match="Mars/Olympus"):
        load_settings(tmp_path / "none.toml", environ={"LOCI_TIMEZONE": "Mars/Olympus"})
