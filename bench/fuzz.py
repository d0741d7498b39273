"""Long schema fuzzing of every HTTP endpoint (schemathesis), thousands of cases.

    python -m bench.fuzz --examples 400 --json out.json
    python -m bench.fuzz --transport http --examples 200   # real uvicorn process
    python -m bench.fuzz --quick                          # 40 per operation and mode

Cases are generated from the service's own `/schema/openapi.json`, `--examples` per
operation and generation mode (schema-valid and schema-invalid), with a random seed
(`--seed` to replay). `--transport asgi` (default) drives `create_app(...)` in-process
through the full ASGI stack (the count of requests that reached the generic 500 handler is
reported too); `--transport http` fuzzes a real service process on 127.0.0.1. The store
holds a snapshot of `--items` synthetic items, some owned by the default identity so
generated callers get real hits. Two passes: the schema as published, then /v1/tools again
with each memory.* action's real argument schema (the published one says `args: object`),
so the generator reaches every action's logic rather than only its 400. Checks: no 5xx,
documented status codes, content types, headers and bodies, schema-invalid input refused
(see `fuzz_checks`).
Exit status 1 when anything failed; every distinct failure is listed with its input.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from bench import driver
from bench.harness import ServiceProcess, publish, tenant_items
from bench.metrics import machine_info
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from pipelines.settings import Settings

# -- schema fuzzing (schemathesis) --------------------------------------------------------------


@dataclass
class FuzzReport:
    """What fuzzing every operation of an app's OpenAPI schema found."""

    operations: list[str] = field(default_factory=list)
    cases: Counter = field(default_factory=Counter)  # "METHOD /path mode" -> cases sent
    statuses: Counter = field(default_factory=Counter)  # "METHOD /path" status -> count
    failures: list[dict[str, Any]] = field(default_factory=list)  # first of each distinct kind
    failure_counts: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)  # generation problems (not service bugs)

    @property
    def total_cases(self) -> int:
        return sum(self.cases.values())


def fuzz_checks() -> list[Any]:
    """Response checks: no 5xx, documented status codes, content types, headers and
    bodies, and negative (schema-invalid) input rejected. Not `positive_data_acceptance`:
    schema-valid input may still break a rule the schema cannot express (each memory.*
    action's own args, an identity given as query and header with different values, item
    constraints of tag lists) and is then correctly refused with a documented 400."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        negative_data_rejection,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [not_a_server_error, status_code_conformance, content_type_conformance,
            response_headers_conformance, response_schema_conformance, negative_data_rejection]


def fuzz_config() -> Any:
    """Schemathesis configuration: a schema-invalid request refused with 413 (body over
    `max_body_bytes`, e.g. a text beyond its maxLength) is a correct rejection too."""
    import schemathesis

    refused = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5XX"]
    return schemathesis.Config.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": refused}}})


def tool_args_types() -> dict[str, type]:
    """The argument struct of each memory.* action (what `online.tools` validates args with)."""
    from online import tools

    return {
        "memory.propose": tools.ProposeArgs, "memory.write": tools.WriteArgs,
        "memory.search": tools.SearchArgs, "memory.read": tools.ReadArgs,
        "memory.update": tools.UpdateArgs, "memory.link": tools.LinkArgs,
        "memory.consolidate": tools.ConsolidateArgs, "memory.palace.list": tools.PalaceListArgs,
        "memory.palace.get": tools.PalaceGetArgs, "memory.palace.assign": tools.PalaceAssignArgs,
    }


def refine_tool_bodies(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of the OpenAPI document where POST /v1/tools takes one body per action with
    that action's real argument schema (msgspec's, as the dispatcher validates) instead of
    `args: object`: the fuzzer then reaches every action's logic, not only its 400."""
    import copy

    doc = copy.deepcopy(raw)
    types = tool_args_types()
    refs, components = msgspec.json.schema_components(list(types.values()),
                                                      ref_template="#/components/schemas/ToolArgs.{name}")
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.update({f"ToolArgs.{name}": comp for name, comp in components.items()})
    identity = schemas["ToolRequest"]["properties"]["identity"]  # the caller identity's own schema
    bodies = [{"type": "object", "additionalProperties": False, "required": ["action", "identity", "args"],
               "properties": {"action": {"const": action}, "identity": identity, "args": ref}}
              for action, ref in zip(types, refs)]
    content = doc["paths"]["/v1/tools"]["post"]["requestBody"]["content"]
    content["application/json"]["schema"] = {"oneOf": bodies}
    return doc


def fuzz_app(app: Any, *, max_examples: int, derandomize: bool = True, seed: int | None = None,
             modes: Sequence[str] = ("positive", "negative"), refine_tools: bool = False,
             only: Iterable[str] | None = None) -> FuzzReport:
    """Fuzz every operation of `app`'s `/schema/openapi.json` in-process (schemathesis's
    ASGI transport: the app's lifespan runs, requests go through the full ASGI stack).
    `max_examples` per operation and mode; `refine_tools` fuzzes /v1/tools with each
    action's argument schema (`refine_tool_bodies`); `only` limits to these operation
    labels ("POST /v1/tools"). The app's lifespan is shut down at the end."""
    import schemathesis
    from schemathesis.python import asgi

    try:
        schema = schemathesis.openapi.from_asgi("/schema/openapi.json", app, config=fuzz_config())
        if refine_tools:
            refined = schemathesis.openapi.from_dict(refine_tool_bodies(schema.raw_schema), config=fuzz_config())
            refined.app, refined.location, schema = app, schema.location, refined
        return fuzz_schema(schema, max_examples=max_examples, derandomize=derandomize, seed=seed, modes=modes,
                           only=only)
    finally:
        asgi.shutdown_lifespans()


def fuzz_url(base_url: str, *, max_examples: int, derandomize: bool = False, seed: int | None = None,
             modes: Sequence[str] = ("positive", "negative"), refine_tools: bool = False,
             only: Iterable[str] | None = None) -> FuzzReport:
    """The same over real HTTP against a running service (`base_url` like http://127.0.0.1:8765)."""
    import schemathesis

    schema = schemathesis.openapi.from_url(f"{base_url}/schema/openapi.json", config=fuzz_config())
    if refine_tools:
        schema = schemathesis.openapi.from_dict(refine_tool_bodies(schema.raw_schema), config=fuzz_config())
        schema.base_url = base_url
    return fuzz_schema(schema, max_examples=max_examples, derandomize=derandomize, seed=seed, modes=modes,
                       only=only)


def fuzz_schema(schema: Any, *, max_examples: int, derandomize: bool = True, seed: int | None = None,
                modes: Sequence[str] = ("positive", "negative"), only: Iterable[str] | None = None) -> FuzzReport:
    """Generate `max_examples` cases per operation and mode from a loaded schemathesis
    schema, send each, and run `fuzz_checks()` on every answer (all failures recorded,
    none raised)."""
    from hypothesis import HealthCheck, given
    from hypothesis import seed as hseed
    from hypothesis import settings as hsettings
    from schemathesis import GenerationMode

    if derandomize:
        _import_project_modules()
    report = FuzzReport()
    checks = fuzz_checks()
    wanted = set(only) if only is not None else None
    for result in schema.get_all_operations():
        op = result.ok()
        if wanted is not None and op.label not in wanted:
            continue
        report.operations.append(op.label)
        for mode in modes:
            key = f"{op.label} {mode}"
            run = _fuzz_one(report, checks, op, mode)
            run = hsettings(max_examples=max_examples, deadline=None, database=None, derandomize=derandomize,
                            suppress_health_check=list(HealthCheck))(
                given(case=op.as_strategy(generation_mode=GenerationMode(mode)))(run))
            if seed is not None and not derandomize:
                run = hseed(seed)(run)
            try:
                run()
            except Exception as exc:  # noqa: BLE001 - an unsatisfiable mode is not a service bug
                name = type(exc).__name__
                if name != "Unsatisfiable":  # operations without inputs have no negative cases
                    report.errors.append(f"{key}: {name}: {str(exc)[:300]}")
    return report


PROJECT_PACKAGES = ("online", "pipelines", "assets", "loci", "bench")


def _import_project_modules() -> None:
    """Import every module of the project's packages before generating.

    Hypothesis mixes constants found in the source of the *local modules imported so far*
    into what it draws, so a derandomized run generated different cases depending on which
    tests ran before it in the same process (and lost its POST /v1/tools 200s after a
    consolidating test). With every project module imported, the pool, and so the cases,
    are the same whatever ran first."""
    import importlib
    import pkgutil

    for name in PROJECT_PACKAGES:
        package = importlib.import_module(name)
        for module in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            importlib.import_module(module.name)


def _fuzz_one(report: FuzzReport, checks: list[Any], op: Any, mode: str) -> Any:
    """The body run for each generated case of one operation and mode."""
    key, label = f"{op.label} {mode}", op.label

    def run(case: Any) -> None:
        report.cases[key] += 1
        response = case.call()
        report.statuses[f"{label} {response.status_code}"] += 1
        for check in checks:
            try:
                case.validate_response(response, checks=[check])
            except (AssertionError, Exception, BaseExceptionGroup) as exc:  # noqa: B014
                kind = (label, mode, check.__name__, response.status_code)
                report.failure_counts[kind] += 1
                if report.failure_counts[kind] == 1:
                    report.failures.append({
                        "operation": label, "mode": mode, "check": check.__name__,
                        "status": response.status_code, "response": response.text[:400],
                        "message": str(exc)[:1500],
                    })

    return run


# -- the benchmark ------------------------------------------------------------------------------


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("fuzz", __doc__, quick="smoke run: 40 cases per operation and mode")
    p.add_argument("--examples", type=int, default=None,
                   help="cases per operation and mode (default 400; --quick 40)")
    p.add_argument("--transport", choices=["asgi", "http"], default="asgi")
    p.add_argument("--items", type=int, default=200, help="snapshot items to fuzz against")
    p.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random, reported)")
    args = p.parse_args(argv)
    args.examples = args.examples if args.examples is not None else (40 if args.quick else 400)
    if args.examples < 1 or args.items < 0:
        p.error("--examples must be >= 1 and --items >= 0")
    if args.seed is None:
        args.seed = random.randrange(2**32)
    return args


def run_pass(args: argparse.Namespace, settings: Settings, embedder: Any, *, refine_tools: bool) -> dict[str, Any]:
    """One fuzzing pass over every operation (or, refined, over /v1/tools per action)."""
    from online.app import create_app

    only = ["POST /v1/tools"] if refine_tools else None
    started = time.monotonic()
    internal_errors = None
    if args.transport == "asgi":
        app = create_app(settings, embedder=embedder, check_interval_ms=0)
        report = fuzz_app(app, max_examples=args.examples, derandomize=False, seed=args.seed,
                          refine_tools=refine_tools, only=only)
        internal_errors = app.state.internal_errors
    else:
        with ServiceProcess(settings) as service:
            report = fuzz_url(service.url, max_examples=args.examples, seed=args.seed,
                              refine_tools=refine_tools, only=only)
            if service.proc is not None and service.proc.poll() is not None:
                report.errors.append(f"the service died: {service.log_tail()}")
    elapsed = time.monotonic() - started
    by_op: dict[str, dict[str, Any]] = {}
    for op in report.operations:
        statuses = {key.rsplit(" ", 1)[1]: n for key, n in report.statuses.items() if key.rsplit(" ", 1)[0] == op}
        by_op[op] = {"positive": report.cases[f"{op} positive"], "negative": report.cases[f"{op} negative"],
                     "statuses": dict(sorted(statuses.items())),
                     "failures": sum(n for k, n in report.failure_counts.items() if k[0] == op)}
    server_errors = sum(n for k, n in report.statuses.items() if k.rsplit(" ", 1)[1].startswith("5"))
    return {
        "duration_s": round(elapsed, 1),
        "cases": report.total_cases,
        "operations": by_op,
        "server_errors_5xx": server_errors,
        "internal_errors": internal_errors,
        "failures": report.failures,
        "failure_counts": {" | ".join(map(str, k)): n for k, n in report.failure_counts.items()},
        "generation_errors": report.errors,
        "ok": not report.failures and not report.errors and server_errors == 0 and not internal_errors,
    }


def run(args: argparse.Namespace, workdir: Path, say) -> dict[str, Any]:
    settings = Settings(embedder="hash", data_dir=str(workdir / "data"), max_body_bytes=200_000)
    embedder = HashEmbedder(settings.embedder_dim)
    owners = [Identity(), Identity(user_id="ann", project_id="atlas"), Identity(user_id="bob", org_id="globex")]
    publish(settings, tenant_items(args.items, random.Random(args.seed), owners), embedder)
    passes = {}
    for name, refine in (("schema", False), ("tool-args", True)):
        say(f"fuzzing ({name}) over {args.transport}: {args.examples} cases per operation and mode, "
            f"seed {args.seed} ...")
        passes[name] = run_pass(args, settings, embedder, refine_tools=refine)
    cases = sum(p["cases"] for p in passes.values())
    elapsed = sum(p["duration_s"] for p in passes.values())
    return {
        "bench": "fuzz",
        "argv": driver.argv_record(args),
        "machine": machine_info(),
        "cases": cases,
        "duration_s": round(elapsed, 1),
        "cases_per_s": round(cases / elapsed, 1) if elapsed else None,
        "passes": passes,
        "ok": all(p["ok"] for p in passes.values()),
    }


def _print(out: dict[str, Any]) -> None:
    console = driver.console()
    for name, res in out["passes"].items():
        console.print(driver.table(
            f"Schema fuzzing, pass {name!r} ({out['argv']['transport']}, seed {out['argv']['seed']}): "
            f"{res['cases']} cases in {res['duration_s']} s",
            ("operation", "positive", "negative", "statuses", "failures"),
            [(op, row["positive"], row["negative"], " ".join(f"{s}:{n}" for s, n in row["statuses"].items()),
              row["failures"]) for op, row in res["operations"].items()],
            left=("statuses",)))
        console.print(f"5xx answers: {res['server_errors_5xx']}; generic-500 handler hits: {res['internal_errors']}")
        for f in res["failures"]:
            console.print(f"FAILURE {f['operation']} [{f['mode']}] {f['check']} -> {f['status']}\n{f['message']}\n")
        for e in res["generation_errors"]:
            console.print(f"generation error: {e}")
    console.print(f"{out['cases']} cases, {out['cases_per_s']} per s: {'OK' if out['ok'] else 'FAILED'}")


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), run, _print, passed=lambda out: out["ok"])


if __name__ == "__main__":
    raise SystemExit(main())
