"""The consolidation job and what triggers it: a schedule, a short-term-memory threshold
sensor and a `memory.consolidate` request sensor.

The threshold counts short-term items that consolidation can act on (`pipelines.
consolidate.mergeable`): verbatim chat messages age out instead of merging and quarantined
items expire, so counting them would request runs that cannot bring the count down.

Sensors never open the warehouse (DuckDB lets nobody else open the file while a run
writes it). They read the inbox (SQLite WAL: readers never wait) and the published
snapshot's manifest, whose `extra` carries the STM item count per owner partition at the
time it was built, and keep their progress in the sensor cursor.

At most one run writes the warehouse: every asset and check is in the concurrency pool
`loci/warehouse`, which `dagster.yaml` limits to one run in progress (queued run
coordinator, run granularity), whether the run is this job or an ad-hoc selection in the UI;
a run started outside the queue (`loci consolidate`) waits on the warehouse file lock.
"""


import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import dagster as dg

from assets.graph import CONSOLIDATION_ASSETS, WAREHOUSE_TAG
from assets.resources import LociSettingsResource
from pipelines import consolidate as stages
from pipelines.inbox import inbox_exists, open_inbox
from pipelines.settings import Settings

SENSOR_BATCH = 20_000  # inbox events read per evaluation; the cursor continues next time
STM_EVENT_KINDS = ("turn", "proposal", "memory.write")
TRIGGER_TAG = "loci/trigger"

consolidate_job = dg.define_asset_job(
    name="consolidate_job",
    selection=dg.AssetSelection.assets(*CONSOLIDATION_ASSETS),
    executor_def=dg.in_process_executor,  # DuckDB has one writer: one process, one connection
    tags={WAREHOUSE_TAG: "write"},
    description="Consolidate the inbox into the warehouse and publish a snapshot.",
)


def build_schedule(settings: Settings) -> dg.ScheduleDefinition:
    """The periodic run (`settings.schedule_cron`, hourly by default, UTC)."""
    try:
        return dg.ScheduleDefinition(
            name="consolidation_schedule",
            job=consolidate_job,
            cron_schedule=settings.schedule_cron,
            execution_timezone="UTC",
            default_status=dg.DefaultScheduleStatus.RUNNING,
            tags={TRIGGER_TAG: "schedule"},
            description="Periodic consolidation (settings.schedule_cron).",
        )
    except dg.DagsterInvalidDefinitionError as exc:
        raise ValueError(f"invalid schedule_cron {settings.schedule_cron!r}: {exc}") from exc


def _published(settings: Settings) -> tuple[str | None, int, dict[str, int]]:
    """(version, watermark, STM items per partition) of the published snapshot."""
    manifest = stages.read_published_manifest(settings.snapshots_path)
    if manifest is None:
        return None, 0, {}
    counts = manifest.extra.get("stm_by_partition") or {}
    return manifest.version, int(manifest.watermark), {str(k): int(v) for k, v in counts.items()}


@dataclass
class ThresholdCursor:
    """Progress of the threshold sensor: which snapshot its counts start from, the last
    inbox seq it has read, and the STM items those events add per partition."""

    version: str | None = None
    seq: int = 0
    pending: dict[str, int] = field(default_factory=dict)

    @classmethod
    def decode(cls, raw: str | None) -> "ThresholdCursor":
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
            return cls(version=data.get("version"), seq=int(data.get("seq", 0)),
                       pending={str(k): int(v) for k, v in (data.get("pending") or {}).items()})
        except (ValueError, TypeError, AttributeError):
            return cls()  # an unreadable cursor restarts from the published snapshot

    def encode(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def _read_events(settings: Settings, after: int, kinds: tuple[str, ...]) -> tuple[list[Any], int]:
    """Events of `kinds` in (after, top] (at most SENSOR_BATCH) and the seq read up to."""
    if not inbox_exists(settings):
        return [], after
    with open_inbox(settings) as inbox:
        top = inbox.max_seq()
        if top <= after:
            return [], after
        events = [e for e in inbox.read_after(after, limit=SENSOR_BATCH, kinds=list(kinds)) if e.seq <= top]
    reached = events[-1].seq if len(events) >= SENSOR_BATCH else top
    return events, reached


def evaluate_stm_threshold(settings: Settings, cursor: str | None) -> dg.SensorResult:
    """The threshold sensor's logic (also callable without a sensor context)."""
    version, watermark, base = _published(settings)
    state = ThresholdCursor.decode(cursor)
    if state.version != version or state.seq < watermark:
        state = ThresholdCursor(version=version, seq=watermark)  # new snapshot: recount from it
    events, reached = _read_events(settings, state.seq, STM_EVENT_KINDS)
    pending = Counter(state.pending)
    pending.update(stages.pending_stm_by_partition(events))
    state = ThresholdCursor(version=version, seq=reached, pending=dict(sorted(pending.items())))
    totals = Counter(base)
    totals.update(pending)
    over = {p: n for p, n in sorted(totals.items()) if n > settings.stm_threshold and pending.get(p, 0) > 0}
    if not over:
        busiest = max(totals.values(), default=0)
        return dg.SensorResult(
            skip_reason=f"no scope above {settings.stm_threshold} STM items (largest: {busiest})",
            cursor=state.encode(),
        )
    request = dg.RunRequest(
        # One request per published snapshot: while that run is queued or running, later
        # evaluations repeat the key and the daemon does not launch it again.
        run_key=f"stm-threshold:{version or 'none'}",
        tags={TRIGGER_TAG: "stm-threshold", "loci/over_threshold": ",".join(over)[:250]},
    )
    return dg.SensorResult(run_requests=[request], cursor=state.encode())


@dg.sensor(
    job=consolidate_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests a run when the short-term items consolidation can act on (not chat "
    "messages, not quarantined) of any owner scope pass settings.stm_threshold (published "
    "snapshot counts + items the inbox adds after its watermark).",
)
def stm_threshold_sensor(context: dg.SensorEvaluationContext, loci: LociSettingsResource) -> dg.SensorResult:
    return evaluate_stm_threshold(loci.get(), context.cursor)


def evaluate_consolidate_requests(settings: Settings, cursor: str | None) -> dg.SensorResult:
    """The request sensor's logic: one run for the `memory.consolidate` events after the
    cursor (first evaluation: after the published snapshot's watermark)."""
    try:
        after = int(cursor) if cursor else _published(settings)[1]
    except ValueError:
        after = _published(settings)[1]
    requests, reached = _read_events(settings, after, ("memory.consolidate",))
    if not requests:
        return dg.SensorResult(skip_reason="no memory.consolidate request", cursor=str(reached))
    last = requests[-1]
    scopes = sorted({str(e.payload.get("scope", "project")) for e in requests})
    request = dg.RunRequest(
        run_key=f"memory.consolidate:{last.event_id}",
        tags={TRIGGER_TAG: "memory.consolidate", "loci/request_seq": str(last.seq),
              "loci/request_scopes": ",".join(scopes)[:250], "loci/requests": str(len(requests))},
    )  # fmt: skip
    return dg.SensorResult(run_requests=[request], cursor=str(reached))


@dg.sensor(
    job=consolidate_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests a run when a memory.consolidate event lands in the inbox.",
)
def consolidate_request_sensor(context: dg.SensorEvaluationContext, loci: LociSettingsResource) -> dg.SensorResult:
    return evaluate_consolidate_requests(loci.get(), context.cursor)
