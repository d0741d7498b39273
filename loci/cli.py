"""`loci` — the user-facing command line over the three layers.

Every command reads the same settings (`loci.toml`, `LOCI_*` environment variables; see
README). Heavy imports happen inside commands so `loci --help` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks (print a table, write JSON).")
flags_app = typer.Typer(no_args_is_help=True, help="Feature flags (a running proxy picks up a flip within a second).")
app.add_typer(bench_app, name="bench")
app.add_typer(flags_app, name="flags")
policy_app = typer.Typer(no_args_is_help=True, help="The write policy's learned layer.")
app.add_typer(policy_app, name="policy")
console = Console()
err = Console(stderr=True)

DATA_OPT = typer.Option(None, "--data-dir", help="Data directory (default: settings.data_dir).")
TZ_OPT = typer.Option(None, "--tz", help="Show times in this IANA zone (default: the timezone setting, UTC "
                                         "unless set).")
# Whose the turns of an imported chat or LoCoMo file are, where the file does not say.
USER_OPT = typer.Option(None, "--user", help="Owner of the turns (LoCoMo: instead of each sample's id; chat: "
                        "rows without user_id).")
PROJECT_OPT = typer.Option(None, "--project", help="Project the turns were said in (LoCoMo: instead of "
                           "'locomo'; chat: rows without project_id).")
ORG_OPT = typer.Option(None, "--org", help="Org of the turns (rows without org_id).")
SPEAKER_OPT = typer.Option(None, "--speaker", help="LoCoMo: your own name among the speakers; your turns land "
                           "as the user's, as in a live chat.")
SAMPLE_CHATS = Path(__file__).resolve().parents[1] / "data" / "samples" / "chats.jsonl"


def _settings(data_dir: Optional[str] = None, **overrides):
    from pipelines.settings import load_settings

    if data_dir:
        overrides["data_dir"] = data_dir
    return load_settings(**overrides)


def _fail(message: str, code: int = 1) -> None:
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code)


def _identity(user: str, project: str, session: str, org: str, source: str):
    """The caller a command acts for, by the identity rule of every API body (no empty or
    blank part): a bad one stops the command with a message naming where it came from."""
    import msgspec

    from online.schemas import CallerIdentity
    from pipelines.records import Identity

    ids = {"user_id": user, "project_id": project, "session_id": session, "org_id": org}
    try:
        msgspec.convert(ids, CallerIdentity)
    except msgspec.ValidationError as exc:
        _fail(f"identity ({source}): {exc}", 2)
    return Identity(**ids)


def _tags(tags: Optional[list[str]]) -> list[str]:
    """The --tag options as a search's tag filter reads them (`normalise_label`); a blank one
    stops the command (it would match nothing, silently)."""
    from pipelines.recall.lexical import normalise_label

    wanted = [normalise_label(t) for t in tags or []]
    if "" in wanted:
        _fail("--tag: a tag is empty", 2)
    return wanted


def _warehouse_busy(settings) -> bool:
    """True while a consolidation run holds the warehouse (its cross-process lock)."""
    import filelock

    from pipelines.consolidate.lock import lock_path

    if not settings.warehouse_path.exists():
        return False
    lock = filelock.FileLock(lock_path(settings.warehouse_path), thread_local=False)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        return True
    lock.release()
    return False


def _note(message: str) -> None:
    err.print(f"[yellow]note:[/yellow] {message}", soft_wrap=True)


def _note_busy() -> None:
    _note("a consolidation is running (it holds the warehouse): answering from the published "
          "snapshot and the inbox")


def _print_report(report: dict, turns: bool = True) -> None:
    table = Table(title="ingested")
    columns = ("turns", "accepted", "quarantined", "rejected", "parse_errors", "redactions")
    for key in columns:
        table.add_column(key, justify="right")
    table.add_row(*(str(report.get(k, 0)) for k in columns))
    console.print(table)
    if turns:  # chat and LoCoMo turns, not an items import
        console.print(f"{report['turns']} turns landed, {report['accepted']} accepted, {report['quarantined']} "
                      f"quarantined, {report['rejected']} rejected; {report['already']} already in the inbox "
                      "(ingested before: nothing new landed for them)")
    elif report.get("already"):
        console.print(f"{report['already']} item(s) already in the inbox "
                      "(imported before: nothing new landed for them)")
    for bad in report.get("bad_rows", []):
        err.print(f"[yellow]skipped[/yellow] {bad}")


def _land(path: Path, format: Optional[str], data_dir: Optional[str], *, usual: str,
          owner: tuple[Optional[str], Optional[str], Optional[str]], speaker: Optional[str] = None) -> None:
    """`loci ingest` and `loci import`: one reader per format; with no --format, the one
    the file's first row names (a chat export given to `import`, an items export given to
    `ingest`, is read as what it is, with a note), else the command's `usual` one. `owner`:
    --user/--project/--org, whose turns they are where the file does not say; `speaker`:
    the importer's own name among a LoCoMo file's speakers."""
    from pipelines.inbox import open_inbox
    from pipelines.ingest import Owner, file_format, import_items_jsonl, ingest_chat_jsonl, ingest_locomo
    from pipelines.policy import Policy

    if not path.is_file():
        _fail(f"no such file: {path}")
    readers = {"chat": ingest_chat_jsonl, "locomo": ingest_locomo, "items": import_items_jsonl}
    if format is not None and format not in readers:
        _fail(f"unknown format {format!r}; use one of {sorted(readers)}", 2)
    if format is None:
        format = file_format(path) or usual
        if format != usual:
            err.print(f"{path} holds {_FORMAT_NAMES[format]}: read as such (--format {format})")
    given = dict(zip(("user_id", "project_id", "org_id"), owner))
    if any(v is not None for v in given.values()):
        if format == "items":
            _fail("--user/--project/--org name whose turns a chat or LoCoMo file holds; "
                  "an export names each item's own scope", 2)
        _identity(*(v or "default" for v in (given["user_id"], given["project_id"], "default", given["org_id"])),
                  "--user/--project/--org")
    if speaker is not None and format != "locomo":
        _fail("--speaker names the importer among a LoCoMo file's speakers; a chat row says its role", 2)
    whose = Owner(**given, speaker=speaker)
    settings = _settings(data_dir)
    with open_inbox(settings) as inbox:
        try:
            if format in ("chat", "items"):  # proposals and items meet the live chat's checks (contradictions)
                from online.state import MemoryService

                with MemoryService(settings) as service:
                    report = readers[format](path, inbox, service.policy, existing=lambda who: (
                        lambda proposal: service.existing_like(who, service.view())(proposal)),
                        **({"owner": whose, "stored": lambda who: service.view().visible_items(who)}
                           if format == "chat" else {}))
            else:
                report = readers[format](path, inbox, Policy(settings), owner=whose)
        except ValueError as exc:
            _fail(str(exc))
    _print_report(report.as_dict(), turns=format != "items")
    if report.bad_rows:
        _fail(f"{len(report.bad_rows)} line(s) skipped (listed above); every other line was ingested")


_FORMAT_NAMES = {"chat": "chat turns (rows with role and text)", "locomo": "LoCoMo conversations",
                 "items": "exported items (rows of `loci export`)"}


def _land_command(usual: str, path_help: Optional[str] = None):
    """`loci ingest` and `loci import`: the same arguments, the format read by default
    (`usual`, listed first in --format's help) aside."""
    formats = " | ".join([usual, *(name for name in _FORMAT_NAMES if name != usual)])

    def land(
        path: Path = typer.Argument(..., help=path_help),
        format: Optional[str] = typer.Option(None, "--format",
                                             help=f"{formats} (default: read from the file, else {usual})"),
        data_dir: Optional[str] = DATA_OPT,
        user: Optional[str] = USER_OPT,
        project: Optional[str] = PROJECT_OPT,
        org: Optional[str] = ORG_OPT,
        speaker: Optional[str] = SPEAKER_OPT,
    ) -> None:
        _land(path, format, data_dir, usual=usual, owner=(user, project, org), speaker=speaker)

    return land


app.command("ingest", help="Land turns and governed proposals in the inbox; report accepted/quarantined/rejected.")(
    _land_command("chat", path_help="A chat JSONL file (see README), or a LoCoMo JSON file."))
app.command("import", help="Import items exported with `loci export` (governed again on the way in); an exported\n"
            "chat (chat JSONL) or a LoCoMo file is imported as `loci ingest` lands it.")(_land_command("items"))


@app.command()
def consolidate(
    data_dir: Optional[str] = DATA_OPT,
    shard: Optional[int] = typer.Option(None, "--shard", help="With shards > 1: consolidate this shard only."),
) -> None:
    """Run the consolidation job in-process: one line per stage as it completes (count,
    seconds), then a summary. With shards > 1: every shard, one process each (or --shard)."""
    from assets.run import consolidate_shards, run_consolidation

    settings = _settings(data_dir)
    if settings.shards > 1 and shard is None:
        summaries = consolidate_shards(settings)
        for k, summary in summaries.items():
            console.print(f"shard {k}: {summary.get('status')} in {summary.get('duration_s')} s")
        if any(s.get("status") not in (None, "success") for s in summaries.values()):
            raise typer.Exit(1)
        return
    if shard is not None:
        try:
            settings = settings.for_shard(shard)
        except ValueError as exc:
            _fail(str(exc), 2)
    summary = run_consolidation(settings, progress=lambda line: err.print(line, markup=False, highlight=False))
    _print_summary(summary)
    if summary.get("status") not in (None, "success"):
        raise typer.Exit(1)


def _print_summary(summary: dict) -> None:
    table = Table(title="consolidation")
    table.add_column("what")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, sort_keys=True)
        table.add_row(str(key), str(value))
    console.print(table)


@app.command()
def reembed(data_dir: Optional[str] = DATA_OPT) -> None:
    """Re-embed every item with the configured embedder, every stored session read again with the
    configured message context first (after changing the embedder or how message vectors are made)."""
    from assets.run import reembed_all

    console.print(reembed_all(_settings(data_dir)))


@app.command()
def search(
    query: str,
    user: str = typer.Option("default", "--user"),
    project: str = typer.Option("default", "--project"),
    session: str = typer.Option("default", "--session"),
    org: str = typer.Option("default", "--org"),
    k: int = typer.Option(10, "--k"),
    mode: str = typer.Option("catalog", "--mode", help="inject | catalog | hybrid | auto (the block when "
                                                        "a found memory is confident enough, else the catalog)"),
    tags: Optional[list[str]] = typer.Option(None, "--tag", help="Only memories with this tag (repeat: with "
                                             "every one)."),
    data_dir: Optional[str] = DATA_OPT,
) -> None:
    """Recall from the published snapshot plus fresh inbox events (the service's engine)."""
    from online.state import MemoryService
    from pipelines.recall.query import RecallError, check_request

    if not query.strip():
        _fail("empty query", 2)
    identity = _identity(user, project, session, org, "--user/--project/--session/--org")
    tags = _tags(tags)
    try:  # the engine's own argument check, before anything is opened
        check_request(query, identity, mode, k)
    except RecallError as exc:
        _fail(str(exc), 2)
    settings = _settings(data_dir)
    if _warehouse_busy(settings):
        _note_busy()
    with MemoryService(settings) as service:
        result = service.recall(query, identity, mode=mode, k=k, tags=tags)
    _print_recall(result, mode)


def _add_id_column(table: Table, ids: list[str]) -> None:
    """Ids are what `loci show` takes: never cut, whatever the terminal's width."""
    table.add_column("id", no_wrap=True, min_width=max((len(i) for i in ids), default=2))


def _print_recall(result, mode: str) -> None:
    from pipelines.recall.episodic import turn_title

    if not result.found:
        console.print(result.message)
        return
    if mode in ("inject", "hybrid", "auto") and result.injection:
        console.print(result.injection, markup=False, highlight=False)
    if mode in ("catalog", "hybrid") or (mode == "auto" and not result.injection):
        table = Table(title="recall")
        for col in ("score", "tier", "type", "title"):
            table.add_column(col, overflow="fold")
        _add_id_column(table, [hit.item.id for hit in result.hits])
        for hit in result.hits:
            table.add_row(f"{hit.score:.3f}", hit.item.tier, hit.item.type, turn_title(hit.item)[:60], hit.item.id)
        console.print(table)


@app.command()
def show(
    item_id: str,
    as_json: bool = typer.Option(False, "--json", help="The raw record: item, revisions, events."),
    tz: Optional[str] = TZ_OPT,
    data_dir: Optional[str] = DATA_OPT,
) -> None:
    """Show one item, a change held for review beside it (old -> new, who proposed it), and
    its history: one line per change (time, actor, action, inbox seq, what changed), refused
    attempts included; then the earlier claims it corrected (who stated each, when)."""
    from pipelines.item_report import describe_item, earlier_lines, held_lines, history_lines, said_otherwise_lines
    from pipelines.records import time_zone

    settings = _settings(data_dir)
    zone = tz or settings.timezone
    try:
        time_zone(zone)
    except ValueError as exc:
        _fail(f"--tz: {exc}")
    found = describe_item(settings, item_id)
    if found is None:
        _fail(f"no item {item_id}")
    if as_json:
        typer.echo(json.dumps(found, default=str, indent=2, ensure_ascii=False))
        return
    item = found["item"]
    state = "archived" if item["archived"] else (
        f"superseded by {item['superseded_by']}" if item["superseded_by"] else "active")
    typer.echo(f"{item['id']}  {item['tier']} {item['type']}  {item['title']!r}  "
               f"[{item['scope']['kind']} scope, {item['validation']}, {state}; {found['source']}]")
    typer.echo(f"  {item['content']}")
    if found.get("palace"):
        typer.echo(f"  palace: {found['palace']}")
    for line in held_lines(found):
        typer.echo(f"  {line}")
    said_otherwise = said_otherwise_lines(found)
    if said_otherwise:  # a turn: what it said was corrected since (recall marks it so)
        typer.echo("said earlier; a claim said in it was corrected since by:")
    for line in said_otherwise:
        typer.echo(f"  {line}")
    lines = history_lines(found, zone)
    typer.echo(f"history (time {zone}, actor, action, inbox seq, change):" if lines else "no history yet")
    for line in lines:
        typer.echo(f"  {line}")
    earlier = earlier_lines(found, zone)
    if earlier:
        typer.echo(f"replaced earlier versions, newest first (time {zone} stated, by, id, what it said):")
    for line in earlier:
        typer.echo(f"  {line}")


@app.command()
def audit(
    item_id: str,
    as_json: bool = typer.Option(False, "--json", help="One JSON object per read."),
    tz: Optional[str] = TZ_OPT,
    data_dir: Optional[str] = DATA_OPT,
) -> None:
    """Who changed an item and who was shown it: its changes by people (who wrote, edited,
    reviewed or replaced it, when, why; every field and the pipeline's work: `loci show`),
    then each read that returned it (search, read, browser card, items API; time, user,
    project, session, org, action) and each refused attempt to change it (with why), oldest
    first. `--json`: the reads only, one object each."""
    from pipelines.item_report import describe_item, history_lines, reads_of, shown_at
    from pipelines.records import time_zone

    settings = _settings(data_dir)
    zone = tz or settings.timezone
    try:
        time_zone(zone)
    except ValueError as exc:
        _fail(f"--tz: {exc}", 2)
    reads = reads_of(settings, item_id)
    if as_json:
        for row in reads:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    found = describe_item(settings, item_id)
    changes = history_lines(found, zone, changes_only=True) if found is not None else []
    if changes:
        typer.echo(f"changes of {item_id} (time {zone}, who, action, inbox seq, change and why):")
    for line in changes:
        typer.echo(f"  {line}")
    typer.echo(f"reads of {item_id} (time {zone}, user, project, session, org, action):" if reads
               else f"no read returned {item_id}")
    for row in reads:
        refused = f"  REFUSED: {row['refused']}" if row["refused"] else ""
        typer.echo(f"  {shown_at(row['at'], zone).replace('T', ' ')[:19]}  {row['user']:<10} {row['project']:<12} "
                   f"{row['session']:<10} {row['org']:<8} {row['action']}{refused}")


@app.command()
def stats(data_dir: Optional[str] = DATA_OPT) -> None:
    """Counts per tier/type, the inbox, the published snapshot."""
    from pipelines.item_report import collect_stats, served_counts, served_items

    settings = _settings(data_dir)
    out = collect_stats(settings)
    if settings.warehouse_path.exists() and not isinstance(out.get("warehouse"), dict):
        _note_busy()
        out["warehouse"] = None
        out["served"] = served_counts(served_items(settings))
    console.print_json(json.dumps(out, default=str))


@app.command("list")
def list_items(
    tier: Optional[str] = typer.Option(None, "--tier", help="stm | mtm | ltm (default: every tier)."),
    data_dir: Optional[str] = DATA_OPT,
) -> None:
    """Active items per tier (raw chat messages left out), from the warehouse."""
    from pipelines.item_report import served_items, tier_listing
    from pipelines.records import TIERS
    from pipelines.warehouse import WarehouseError

    if tier is not None and tier not in TIERS:
        _fail(f"unknown tier {tier!r}; use one of {', '.join(TIERS)}", 2)
    settings = _settings(data_dir)
    try:
        listing = tier_listing(settings)
    except WarehouseError:
        if settings.warehouse_path.exists():
            _note_busy()
        else:
            _note("nothing consolidated yet: listing from the inbox")
        listing = tier_listing(settings, served_items(settings))
    for name, rows in listing.items():
        if tier is not None and name != tier:
            continue
        table = Table(title=f"{name.upper()} ({len(rows)})")
        for col in ("type", "title", "owner", "state"):
            table.add_column(col, overflow="fold")
        _add_id_column(table, [r["id"] for r in rows])
        for row in rows:
            table.add_row(row["type"], row["title"][:70], row["owner"], row["state"], row["id"])
        console.print(table)


@app.command()
def export(
    format: str = typer.Option("jsonl", "--format"),
    out: Optional[Path] = typer.Option(None, "--out", help="File to write (default stdout)."),
    include_inactive: bool = typer.Option(
        False, "--all", help="A full backup: superseded/archived items too, and forgotten (retracted) ones "
                             "whole rather than as tombstones (id, no text)."),
    user: Optional[str] = typer.Option(None, "--user", help="Only what this user may see (with --project, "
                                       "--session, --org; each 'default' unless given)."),
    project: Optional[str] = typer.Option(None, "--project", help="See --user."),
    session: Optional[str] = typer.Option(None, "--session", help="See --user."),
    org: Optional[str] = typer.Option(None, "--org", help="See --user."),
    tags: Optional[list[str]] = typer.Option(None, "--tag", help="Only items with this tag (repeat: with "
                                             "every one), as a search's tag filter reads them."),
    types: Optional[list[str]] = typer.Option(None, "--type", help="Only items of this type (repeat: of any "
                                              "one): `--type decision` is the decision log."),
    with_history: bool = typer.Option(
        False, "--history", help="A log, not a backup: each line {\"item\", \"history\"}, the changes people "
                                 "made to it (when, who, what it said after, why: the proposal's reason, a "
                                 "reviewer's note)."),
    data_dir: Optional[str] = DATA_OPT,
) -> None:
    """Export items from the warehouse as JSON lines (one MemoryItem per line): every item (a
    backup), or what one caller may see (--user/--project/--session/--org), or with --tag /
    --type; with --history, each with the changes people made to it."""
    from pipelines.item_report import export_items
    from pipelines.recall.lexical import normalise_label
    from pipelines.records import ITEM_TYPES

    if format != "jsonl":
        _fail("only --format jsonl is supported", 2)
    unknown = sorted(set(types or ()) - set(ITEM_TYPES))
    if unknown:
        _fail(f"--type: unknown type {', '.join(map(repr, unknown))}; types: {', '.join(ITEM_TYPES)}", 2)
    kinds = set(types or ())
    who = None
    if any(part is not None for part in (user, project, session, org)):
        who = _identity(*("default" if part is None else part for part in (user, project, session, org)),
                        "--user/--project/--session/--org")
    wanted = set(_tags(tags))

    def keep(item) -> bool:
        return (who is None or item.scope.visible_to(who)) and (not kinds or item.type in kinds) and \
            wanted <= {normalise_label(t) for t in item.tags}

    settings = _settings(data_dir)
    handle = out.open("w", encoding="utf-8") if out else sys.stdout
    try:
        n = export_items(settings, handle, include_inactive=include_inactive,
                         keep=keep if who is not None or wanted or kinds else None, with_history=with_history)
    finally:
        if out:
            handle.close()
    err.print(f"exported {n} items")


@app.command()
def schema() -> None:
    """Print the JSON schema of every record type."""
    from pipelines.records import json_schemas

    console.print_json(json.dumps(json_schemas()))


@app.command()
def serve(
    host: Optional[str] = typer.Option(None, "--host"),
    port: Optional[int] = typer.Option(None, "--port"),
    workers: int = typer.Option(1, "--workers", min=1,
                                help="worker processes on one port (they share the memory-mapped snapshot)"),
    data_dir: Optional[str] = DATA_OPT,
    inbox_url: Optional[str] = typer.Option(
        None, "--inbox-url", help="postgresql://... : the inbox replicas share (default: settings.inbox_url)."),
    snapshots_dir: Optional[str] = typer.Option(
        None, "--snapshots-dir", help="The snapshot folder replicas share (default: settings.snapshots_dir)."),
    shard: Optional[int] = typer.Option(
        None, "--shard", help="With shards > 1: the shard this replica serves (its snapshot and tenants)."),
) -> None:
    """Start the recall service (Litestar on uvicorn). Several replicas serve one memory when
    they share the inbox (--inbox-url) and the snapshot folder (--snapshots-dir)."""
    from online.server import serve as run_server

    given = {"host": host, "port": port, "inbox_url": inbox_url, "snapshots_dir": snapshots_dir, "shard": shard}
    overrides = {k: v for k, v in given.items() if v is not None}
    settings = _settings(data_dir, **overrides)
    if settings.shards > 1 and not settings.sharded:
        _fail(f"{settings.shards} shards: name the shard this replica serves (--shard 0..{settings.shards - 1})", 2)
    run_server(settings, workers=workers)


@app.command("inbox-copy")
def inbox_copy(
    source: str = typer.Argument(..., help="The inbox to copy: a SQLite file (e.g. data/inbox.sqlite3) or a "
                                           "postgresql:// URL."),
    to: Optional[str] = typer.Option(None, "--to", help="The inbox to fill (default: the configured inbox_url)."),
    data_dir: Optional[str] = DATA_OPT,
) -> None:
    """Copy every event of an inbox into an empty one, with the same seqs: how a store moves from its
    SQLite inbox to PostgreSQL (docs/deploy.md). Stop every service and consolidation first; an
    interrupted copy resumes when run again."""
    from pipelines.inbox import InboxError, copy_inbox, is_postgres_url, open_inbox

    target = to or _settings(data_dir).inbox_location
    if not is_postgres_url(source) and not Path(source).is_file():
        _fail(f"no inbox at {source}", 2)
    if target == source or (not is_postgres_url(target) and Path(target).resolve() == Path(source).resolve()):
        _fail("the source and the target are the same inbox: name the new one with --to or inbox_url", 2)
    try:
        with open_inbox(source) as src, open_inbox(target) as dst:
            copied = copy_inbox(src, dst, progress=lambda done, total: err.print(f"{done}/{total}"))
            last = dst.max_seq()
    except InboxError as exc:
        _fail(str(exc))
    typer.echo(f"copied {copied} events; the target inbox ends at seq {last}")


@app.command("dagster-home")
def dagster_home_command(data_dir: Optional[str] = DATA_OPT) -> None:
    """Prepare the project-local DAGSTER_HOME and name it in ./.env, so `dg dev` and
    `dagster dev -w workspace.yaml` started here use it (`loci ui` does this too)."""
    from assets.run import prepare_dagster_home

    home = prepare_dagster_home(_settings(data_dir), dotenv_dir=Path.cwd())
    typer.echo(f"DAGSTER_HOME={home} (written to {Path.cwd() / '.env'})")


@app.command()
def ui(port: int = typer.Option(3000, "--port"), data_dir: Optional[str] = DATA_OPT) -> None:
    """Start the Dagster UI (`dagster dev`) with a project-local DAGSTER_HOME."""
    import os
    import subprocess

    from assets.run import prepare_dagster_home

    settings = _settings(data_dir)
    env = {**os.environ, "DAGSTER_HOME": str(prepare_dagster_home(settings, dotenv_dir=Path.cwd()))}
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(root / "workspace.yaml"), "-p", str(port)]
    raise typer.Exit(subprocess.call(cmd, env=env, cwd=root))


@flags_app.command("enable")
def flags_enable(name: str) -> None:
    """Turn a feature flag on (written to loci.toml)."""
    _set_flag(name, True)


@flags_app.command("disable")
def flags_disable(name: str) -> None:
    """Turn a feature flag off (written to loci.toml)."""
    _set_flag(name, False)


@flags_app.command("list")
def flags_list() -> None:
    """Show every flag and its value."""
    from pipelines.settings import FLAG_DEFAULTS

    flags = {**FLAG_DEFAULTS, **_settings().flags}
    for name, value in sorted(flags.items()):
        console.print(f"{name} = {'on' if value else 'off'}")


def _set_flag(name: str, value: bool) -> None:
    from pipelines.settings import FLAG_DEFAULTS, set_flag

    if name not in FLAG_DEFAULTS:
        _fail(f"unknown flag {name!r}; known: {', '.join(sorted(FLAG_DEFAULTS))}", 2)
    path = set_flag(name, value)
    console.print(f"{name} = {'on' if value else 'off'} ({path})")


@policy_app.command("train")
def policy_train(
    data: Optional[list[Path]] = typer.Option(
        None, "--data", help="Labelled JSONL file or folder (secrets*.jsonl, injection*.jsonl; repeatable; default: "
                             "policy/ in $LOCI_BENCH_DATA, else ./bench-data/policy, and the tune halves of the "
                             "repository's blind injection sets). Rows marked half=blind are never trained on."),
    out: Optional[Path] = typer.Option(None, "--out", help="Artefact folder (default: the shipped one in the code)."),
    check: bool = typer.Option(False, "--check", help="Rebuild into a temporary folder and compare it byte for "
                                                      "byte with --out (exit 1 when they differ); write nothing."),
) -> None:
    """Rebuild the learned layer (coefficients + manifest) from labelled data, bit-for-bit."""
    import hashlib
    import tempfile

    from bench import driver
    from pipelines.policy_rules import learned

    paths = list(data) if data else [driver.data_dir() / driver.POLICY_DIR, *learned.REPO_TUNE_SETS]
    for path in paths:
        if not path.exists():
            _fail(f"labelled data not found: {path} (pass --data or set {driver.DATA_ENV})", 2)
    target = out if out is not None else learned.MODEL_DIR
    try:
        layer = learned.train_from(paths)
    except learned.LabelledDataError as exc:
        _fail(str(exc), 2)
    with tempfile.TemporaryDirectory(prefix="loci-policy-") as tmp:
        written = learned.save(layer, Path(tmp) if check else target)
        for kind, m in layer.models.items():
            console.print(f"{kind}: add threshold {m.add_threshold:.2f}, veto threshold {m.veto_threshold:.2f} "
                          f"({layer.manifest['models'][kind]['rows']} rows)")
        differ = []
        for file in written:
            digest = hashlib.sha256(file.read_bytes()).hexdigest()
            console.print(f"{target / file.name}  {file.stat().st_size:,} bytes  sha256 {digest[:16]}")
            if check and (not (target / file.name).exists() or (target / file.name).read_bytes() != file.read_bytes()):
                differ.append(file.name)
    if differ:
        _fail(f"the rebuild differs from {target}: {', '.join(differ)}")
    if check:
        console.print(f"identical to {target}")


# `loci bench NAME` runs `main(argv) -> int` of the module named here (package `bench`).
BENCHMARKS = {
    "policy": ("bench.policy", "Precision, recall and false-positive rate of the write policy per source."),
    "locomo": ("bench.locomo", "Recall quality on a LoCoMo-format file (turn/session recall@k, baselines, ablations)."),
    "latency": ("bench.latency",
                "Recall latency p50/p95/p99 and throughput at 1k/10k/100k items, in-process and HTTP."),
    "startup": ("bench.startup", "A replica worker's start-up CPU per part (load, corpus, each warm part), "
                                 "first worker vs later ones reading the warm cache."),
    "pipeline": ("bench.pipeline", "Consolidation time and turns/s per asset, incremental run, HDBSCAN timing, sizes."),
    "load": ("bench.load", "A bounded mixed load (turns, recalls, tools) against one service process."),
    "scaleout": ("bench.scaleout", "Recalls/s with 1 vs 3 replicas on one PostgreSQL inbox; per-node numbers."),
    "durability": ("bench.durability", "SIGKILL the service and consolidation runs at random points; count losses."),
    "fuzz": ("bench.fuzz", "Schema fuzzing of every HTTP endpoint (schemathesis), long mode."),
    "compare": ("bench.compare", "Loci vs mem0 (own venv, .venv-compare) on the same LoCoMo file: recall and latency."),
    "locomo-rerank": ("bench.locomo_rerank", "Fit and cross-validate the turn re-ranker's weights on LoCoMo "
                                            "(reuses a `loci bench locomo --workdir` snapshot)."),
    "governed": ("bench.governed", "Curated memory first in a chatty multi-user store: MRR, hit@1/3, "
                                   "chatter share of injected text."),
    "conflicts": ("bench.conflicts", "Precision, recall and F1 of the conflict rule on labelled claim pairs, "
                                     "words only and with the embedder's cosine."),
    "merge": ("bench.merge", "Consolidation's merges on the labelled claim pairs: restatements merged, never "
                             "contradictions nor two people's or scopes' claims."),
}
BENCH_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _run_benchmark(name: str, argv: list[str]) -> int:
    import importlib

    module_name = BENCHMARKS[name][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        _fail(f"the {name!r} benchmark is not in this build ({module_name} is missing)")
    return int(module.main(argv) or 0)


def _bench_command(name: str) -> None:
    def command(ctx: typer.Context) -> None:
        raise typer.Exit(_run_benchmark(name, list(ctx.args)))

    command.__doc__ = f"{BENCHMARKS[name][1]} Options: `loci bench {name} --help`."
    bench_app.command(name, context_settings=BENCH_CONTEXT)(command)


for _name in BENCHMARKS:
    _bench_command(_name)


@bench_app.command("all")
def bench_all(
    out_dir: Path = typer.Option(Path("bench-results"), "--out", help="Folder for the JSON results."),
    data: Optional[Path] = typer.Option(
        None, "--data", help="Folder with locomo_dev.json and policy/ (default: $LOCI_BENCH_DATA, else ./bench-data)."),
    quick: bool = typer.Option(False, "--quick", help="Smoke runs of every benchmark."),
    compare: bool = typer.Option(True, "--compare/--no-compare",
                                 help="Include the mem0 comparison (creates .venv-compare on first use)."),
) -> None:
    """Every benchmark in turn, JSON results in --out (default bench-results/)."""
    from bench import driver

    data = data or driver.data_dir()
    locomo, policy = data / driver.LOCOMO_FILE, data / driver.POLICY_DIR
    missing = [str(p) for p in (locomo, policy) if not p.exists()]
    if missing:
        _fail(f"benchmark data not found: {', '.join(missing)}; pass --data DIR or set "
              f"{driver.DATA_ENV} to the folder holding {driver.LOCOMO_FILE} and {driver.POLICY_DIR}/", 2)
    out_dir.mkdir(parents=True, exist_ok=True)
    plan: list[tuple[str, list[str]]] = [("policy", ["--data", str(policy)]), ("locomo", ["--data", str(locomo)])]
    plan += [(name, []) for name in ("governed", "latency", "pipeline", "load", "durability", "fuzz")]
    if compare:
        plan.append(("compare", ["--data", str(locomo)]))
    failed = []
    for name, argv in plan:
        console.rule(f"bench {name}")
        quick_run = ["--quick"] if quick and name not in ("policy", "governed") else []
        argv = argv + ["--json", str(out_dir / f"{name}.json")] + quick_run
        if _run_benchmark(name, argv) != 0:
            failed.append(name)
    if failed:
        _fail(f"benchmarks failed: {', '.join(failed)}")


@app.command()
def proxy(
    host: Optional[str] = typer.Option(None, "--host"),
    port: Optional[int] = typer.Option(None, "--port", help="Listen port (default 11435)."),
    upstream: Optional[str] = typer.Option(None, "--upstream", help="Ollama URL (default OLLAMA_HOST)."),
    connect_timeout: Optional[float] = typer.Option(
        None, "--connect-timeout", help="Seconds to connect to the upstream (default 10)."),
    first_byte_timeout: Optional[float] = typer.Option(
        None, "--first-byte-timeout", help="Seconds until the upstream starts answering; bounds a whole "
                                          "stream:false generation (default 600; 0 = no limit)."),
    between_bytes_timeout: Optional[float] = typer.Option(
        None, "--between-bytes-timeout", help="Seconds between two pieces of a streamed answer "
                                             "(default 600; 0 = no limit)."),
    total_timeout: Optional[float] = typer.Option(
        None, "--total-timeout", help="Seconds for a whole upstream answer (default 0 = no limit)."),
    data_dir: Optional[str] = DATA_OPT,
) -> None:
    """The Ollama drop-in proxy with memory: point any Ollama client at it."""
    from online.proxy.server import serve_proxy
    from online.proxy.upstream import UpstreamTimeouts

    overrides = {k: v for k, v in {
        "host": host, "proxy_port": port, "proxy_connect_timeout_s": connect_timeout,
        "proxy_first_byte_timeout_s": first_byte_timeout, "proxy_between_bytes_timeout_s": between_bytes_timeout,
        "proxy_total_timeout_s": total_timeout,
    }.items() if v is not None}
    settings = _settings(data_dir, **overrides)
    try:
        UpstreamTimeouts.from_settings(settings)
    except ValueError as exc:
        _fail(str(exc))
    serve_proxy(settings, upstream=upstream)


@app.command()
def mcp(
    transport: str = typer.Option("stdio", "--transport", help="stdio | http (streamable HTTP at /mcp)."),
    user: str = typer.Option("default", "--user", envvar="LOCI_USER", help="Caller user id."),
    project: str = typer.Option("default", "--project", envvar="LOCI_PROJECT", help="Caller project id."),
    session: str = typer.Option("default", "--session", envvar="LOCI_SESSION", help="Caller session id."),
    org: str = typer.Option("default", "--org", envvar="LOCI_ORG", help="Caller org id."),
    host: Optional[str] = typer.Option(None, "--host", help="HTTP listen address (default settings.host)."),
    port: int = typer.Option(11436, "--port", help="HTTP listen port."),
    data_dir: Optional[str] = DATA_OPT,
) -> None:
    """MCP server with the memory tools (search, read, propose, update, palace list/get/assign, stats).
    Over HTTP, X-Loci-User/Project/Session/Org headers override the identity per request."""
    from online.mcp_server import serve_http, serve_stdio

    if transport not in ("stdio", "http"):
        _fail(f"--transport must be stdio or http, got {transport!r}", 2)
    identity = _identity(user, project, session, org, "--user/--project/--session/--org or LOCI_USER/...")
    settings = _settings(data_dir)
    if transport == "stdio":
        serve_stdio(settings, identity)
    else:
        serve_http(settings, identity, host or settings.host, port)


@app.command()
def demo(data_dir: Optional[str] = DATA_OPT) -> None:
    """The main job on the embedded default: ingest the sample chats, consolidate, print
    each tier, and answer a recall."""
    settings = _settings(data_dir)
    console.rule("1. ingest the sample chats")
    _land(SAMPLE_CHATS, "chat", settings.data_dir, usual="chat", owner=(None, None, None))
    console.rule("2. consolidate (Dagster job, in-process)")
    consolidate(data_dir=settings.data_dir, shard=None)  # a direct call: every option named
    console.rule("3. what is in each tier")
    list_items(tier=None, data_dir=settings.data_dir)
    console.rule("4. recall: what do we know about the tile latency budget? (user dana, project atlas)")
    search(query="what do we know about the tile latency budget?", user="dana", project="atlas",
           session="s4", org="default", k=5, mode="hybrid", tags=None, data_dir=settings.data_dir)


if __name__ == "__main__":
    app()
