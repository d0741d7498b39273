"""Triggers: the STM-threshold sensor, the memory.consolidate request sensor (both with
`build_sensor_context`), the schedule, and the shipped dagster.yaml run-queue limit."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg

from assets.resources import LociSettingsResource
from assets.run import EARLIER_SHIPPED_DAGSTER_YAML, SHIPPED_DAGSTER_YAML, dagster_home
from assets.sensors import (
    ThresholdCursor,
    build_schedule,
    consolidate_job,
    consolidate_request_sensor,
    stm_threshold_sensor,
)
from pipelines import consolidate as stages
from pipelines.inbox import Inbox
from pipelines.records import Event, Identity, stable_id
from tests.assets.support import REPO, block, dana, erin, inbox_max_seq, ingest, make_settings


def evaluate(sensor, settings, cursor=None) -> dg.SensorResult:
    context = dg.build_sensor_context(cursor=cursor, resources={"loci": LociSettingsResource.from_settings(settings)})
    result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def user_turns(n: int, who=dana, start: int = 0) -> list[dict]:
    return [who(f"message number {start + k} about nothing in particular", role="user") for k in range(n)]


def facts(n: int, who=dana, start: int = 0) -> list[dict]:
    """Assistant turns proposing one distinct project fact each."""
    return [who("Noted. " + block({"type": "fact", "title": f"Fact {start + k}",
                                   "content": f"Service {start + k} listens on port {8000 + start + k}."}))
            for k in range(n)]


def hold_warehouse_open(settings) -> subprocess.Popen:
    """Another process holding the warehouse read-write, as a running job does."""
    code = (
        "import sys, time\n"
        "from pipelines.warehouse import Warehouse\n"
        f"wh = Warehouse({str(settings.warehouse_path)!r})\n"
        "print('open', flush=True)\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=str(REPO), stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "open"
    return proc


def test_threshold_sensor_fires_above_not_below_and_advances_its_cursor(tmp_path):
    settings = make_settings(tmp_path, stm_threshold=4)
    ingest(settings, facts(3) + facts(2, who=erin) + user_turns(6), name="a.jsonl")
    top = inbox_max_seq(settings)

    below = evaluate(stm_threshold_sensor, settings)
    assert not below.run_requests and "largest: 3" in below.skip_reason.skip_message
    cursor = ThresholdCursor.decode(below.cursor)
    assert cursor.seq == top and cursor.version is None
    # Per owner partition; chat messages are not counted (they age out, never merge).
    assert cursor.pending == {"project:default/atlas": 3, "project:default/borealis": 2}

    ingest(settings, facts(2, start=10), name="b.jsonl")  # Dana's project: 5 > 4
    above = evaluate(stm_threshold_sensor, settings, below.cursor)
    (request,) = above.run_requests
    assert request.tags["loci/trigger"] == "stm-threshold"
    assert request.tags["loci/over_threshold"] == "project:default/atlas"
    assert request.run_key == "stm-threshold:none"
    assert ThresholdCursor.decode(above.cursor).seq == inbox_max_seq(settings) > top  # read on from `top`

    # Still above and nothing consolidated yet: the same run key (the daemon dedupes it).
    again = evaluate(stm_threshold_sensor, settings, above.cursor)
    assert [r.run_key for r in again.run_requests] == ["stm-threshold:none"]

    # After a published snapshot the counts restart from its manifest and its watermark.
    stages.consolidate_once(settings)
    manifest = stages.read_published_manifest(settings.snapshots_path)
    remaining = manifest.extra["stm_by_partition"].get("project:default/atlas", 0)
    quiet = evaluate(stm_threshold_sensor, settings, again.cursor)
    assert not quiet.run_requests  # nothing new since the snapshot
    state = ThresholdCursor.decode(quiet.cursor)
    assert (state.version, state.seq, state.pending) == (manifest.version, manifest.watermark, {})

    # New facts push Dana's project over again: fires, keyed by the new snapshot version.
    # The sensor reads the inbox and the manifest only: a run holding the warehouse is no
    # obstacle.
    ingest(settings, facts(max(1, 5 - remaining), start=20), name="c.jsonl")
    holder = hold_warehouse_open(settings)
    try:
        fired = evaluate(stm_threshold_sensor, settings, quiet.cursor)
    finally:
        holder.kill()
        holder.wait()
    assert [r.run_key for r in fired.run_requests] == [f"stm-threshold:{manifest.version}"]


def test_threshold_sensor_counts_governed_proposals_not_rejections(tmp_path):
    settings = make_settings(tmp_path, stm_threshold=2)
    text = "Here. " + block(
        {"type": "fact", "title": "A", "content": "Alpha fact is true.", "scope": "project"},
        {"type": "fact", "title": "Key", "content": "key AKIAIOSFODNN7EXAMPLE", "scope": "project"},
        {"type": "fact", "title": "Unsure", "content": "Maybe beta.", "confidence": 0.1, "scope": "user"},
    )
    ingest(settings, [dana(text)])
    result = evaluate(stm_threshold_sensor, settings)
    # The accepted fact counts; the rejected credential creates nothing; the quarantined
    # one and the chat message are not consolidation work.
    assert ThresholdCursor.decode(result.cursor).pending == {"project:default/atlas": 1}
    assert not result.run_requests


def consolidate_event(seq_hint: str, scope: str = "project") -> Event:
    return Event(event_id=stable_id("evt", "consolidate", seq_hint), kind="memory.consolidate",
                 identity=Identity(user_id="dana", project_id="atlas"), payload={"scope": scope})


def test_consolidate_request_sensor(tmp_path):
    settings = make_settings(tmp_path)
    ingest(settings, user_turns(2))
    nothing = evaluate(consolidate_request_sensor, settings)
    assert not nothing.run_requests and nothing.cursor == "2"

    with Inbox(settings.inbox_path) as inbox:
        inbox.append([consolidate_event("a", "project"), consolidate_event("b", "user")])
    fired = evaluate(consolidate_request_sensor, settings, nothing.cursor)
    (request,) = fired.run_requests  # one run for both requests
    assert request.tags["loci/trigger"] == "memory.consolidate"
    assert request.tags["loci/request_scopes"] == "project,user" and request.tags["loci/requests"] == "2"
    assert request.run_key == f"memory.consolidate:{consolidate_event('b').event_id}"
    assert fired.cursor == "4"

    assert not evaluate(consolidate_request_sensor, settings, fired.cursor).run_requests

    # First evaluation ever: requests older than the published snapshot are not replayed.
    stages.consolidate_once(settings)
    assert not evaluate(consolidate_request_sensor, settings, None).run_requests


def test_sensors_skip_cleanly_without_an_inbox(tmp_path):
    settings = make_settings(tmp_path)
    assert "no memory.consolidate" in evaluate(consolidate_request_sensor, settings).skip_reason.skip_message
    assert not evaluate(stm_threshold_sensor, settings).run_requests
    assert not settings.inbox_path.exists()  # a sensor never creates the inbox


def test_schedule_and_job_tag(tmp_path):
    schedule = build_schedule(make_settings(tmp_path, schedule_cron="*/15 * * * *"))
    assert schedule.cron_schedule == "*/15 * * * *" and schedule.job_name == consolidate_job.name
    assert consolidate_job.tags == {"loci/warehouse": "write"}


def test_shipped_dagster_yaml_limits_warehouse_runs_to_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    home = dagster_home(make_settings(tmp_path, data_dir="data"))
    assert home == (tmp_path / ".dagster_home").resolve()
    assert (home / "dagster.yaml").read_text() == SHIPPED_DAGSTER_YAML.read_text()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        queue = instance.get_concurrency_config().run_queue_config
    assert {"key": "loci/warehouse", "limit": 1} in queue.tag_concurrency_limits
    (home / "dagster.yaml").write_text("# edited by the user\n")
    assert dagster_home(make_settings(tmp_path, data_dir="data")) == home
    assert (home / "dagster.yaml").read_text() == "# edited by the user\n"  # never overwritten


def test_an_unedited_copy_of_an_earlier_shipped_dagster_yaml_is_upgraded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    home = tmp_path / ".dagster_home"
    home.mkdir()
    # The first shipped version: the run-tag limit only, no `loci/warehouse` pool.
    shutil.copyfile(Path(__file__).parent / "fixtures" / "dagster_yaml_v1.yaml", home / "dagster.yaml")
    assert hashlib.sha256((home / "dagster.yaml").read_bytes()).hexdigest() in EARLIER_SHIPPED_DAGSTER_YAML
    dagster_home(make_settings(tmp_path, data_dir="data"))
    assert (home / "dagster.yaml").read_text() == SHIPPED_DAGSTER_YAML.read_text()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        pools = instance.get_concurrency_config().pool_config
    assert pools.default_pool_limit == 1
