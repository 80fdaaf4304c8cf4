"""The reference pages of the documentation, generated from the code at every build.

MkDocs loads this file as a hook (``hooks:`` in ``mkdocs.yml``); ``on_files`` adds four pages
that exist only in the built site, so they cannot drift from what they describe:

- ``reference/cli.md``: every ``starburst`` command and group, walked from the typer app
  (``starburst.cli.main.build_app``) — usage, help, and each argument and option with its help;
- ``reference/api.md``: every operation of the REST API's OpenAPI document
  (``create_app(...).openapi()``), with its parameters and answers;
- ``reference/settings.md``: every field of ``starburst.settings.Settings`` — its environment
  variable, type, default, bounds and description;
- ``reference/helm.md``: every key of ``helm/starburst/values.schema.json``, with its default
  from ``values.yaml`` and its ``# --`` comment there.

``tests/docs/test_reference.py`` checks that each page names every command, operation,
setting and chart value; ``python docs/gen/reference.py DIR`` writes the pages to ``DIR`` to
read them without building the site.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "starburst"
#: dotted Helm keys whose children are documented elsewhere (settings and the price table)
DOCUMENTED_ELSEWHERE = {
    "settings": "[Settings](settings.md): any key of `Settings` except those the chart sets.",
    "priceTable": "The price table's own schema (`starburst/pricing/schema.py`).",
}


def cell(text: object) -> str:
    """``text`` fit for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: object) -> str:
    return f"`{cell(text)}`" if str(text) != "" else ""


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# -- the CLI --------------------------------------------------------------------------------
def cli_commands() -> Iterator[tuple[str, Any]]:
    """(``starburst sub command``, its typer command object), the root and groups included."""
    import typer.core
    import typer.main

    from starburst.cli.main import build_app

    def walk(command: Any, path: str) -> Iterator[tuple[str, Any]]:
        yield path, command
        if isinstance(command, typer.core.TyperGroup):
            for name, sub in command.commands.items():
                yield from walk(sub, f"{path} {name}")

    yield from walk(typer.main.get_command(build_app()), "starburst")


def cli_page() -> str:
    from typer._click.core import Context

    parts = [
        "# CLI reference",
        "",
        "Generated from the `starburst` command itself (its typer app) at every build of this "
        "site. `starburst COMMAND --help` prints the same.",
    ]
    for path, command in cli_commands():
        ctx = Context(command, info_name=path)
        usage = " ".join([path, *command.collect_usage_pieces(ctx)])
        parts += ["", f"## `{path}`", "", "```text", usage, "```", ""]
        parts.append((command.help or "").strip().replace("\b\n", ""))
        rows = []
        for param in command.params:
            record = None if param.hidden else param.get_help_record(ctx)
            if record is not None:
                rows.append((code(record[0]), cell(record[1])))
        if rows:
            parts += ["", table(("Argument or option", "Meaning"), rows)]
        if hasattr(command, "commands"):
            subs = [f"`{path} {name}`" for name in command.commands]
            parts += ["", "Commands: " + ", ".join(subs) + "."]
    return "\n".join(parts) + "\n"


# -- the REST API ---------------------------------------------------------------------------
def openapi_document() -> dict[str, Any]:
    from starburst.adapters.memory.store import MemoryStore
    from starburst.api.app import create_app
    from starburst.settings import Settings

    store = MemoryStore()
    try:
        document: dict[str, Any] = create_app(Settings(), store, auth=True).openapi()
    finally:
        store.close()
    return document


def api_operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            yield method.upper(), path, operation


def _schema_name(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_schema_name(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"array of {_schema_name(schema.get('items', {}))}"
    return str(schema.get("type", "any"))


def _body_fields(document: dict[str, Any], schema: dict[str, Any]) -> list[tuple[str, ...]]:
    """The fields of a request body's component schema, one row each."""
    if "$ref" not in schema:
        return []
    component = document["components"]["schemas"][_schema_name(schema)]
    required = set(component.get("required", []))
    return [
        (
            code(name),
            code(_schema_name(field)),
            "yes" if name in required else "",
            cell(field.get("description", "")),
        )
        for name, field in component.get("properties", {}).items()
    ]


def api_page() -> str:
    document = openapi_document()
    parts = [
        "# REST API reference",
        "",
        "Generated from the API's OpenAPI document at every build of this site. A running "
        "server serves the same document at `/openapi.json` and browsable at `/docs`. Every "
        'error is `{"detail": "<sentence>"}` (a 422 also lists `errors`, one per field).',
    ]
    for method, path, operation in api_operations(document):
        parts += ["", f"## `{method} {path}`", ""]
        summary = operation.get("summary", "")
        description = operation.get("description", "").strip()
        parts.append(f"**{summary}.** {description}".strip())
        params = [
            (
                code(p["name"]),
                p["in"],
                code(_schema_name(p.get("schema", {}))),
                "yes" if p.get("required") else "",
                cell(p.get("description", "")),
            )
            for p in operation.get("parameters", [])
        ]
        if params:
            header = ("Parameter", "In", "Type", "Required", "Meaning")
            parts += ["", table(header, params)]
        body = operation.get("requestBody", {}).get("content", {})
        for media, content in body.items():
            schema = content.get("schema", {})
            parts += ["", f"Body ({code(media)}): {code(_schema_name(schema))}"]
            fields = _body_fields(document, schema)
            if fields:
                parts += ["", table(("Field", "Type", "Required", "Meaning"), fields)]
        answers = [
            (code(status), cell(answer.get("description", "")))
            for status, answer in operation.get("responses", {}).items()
        ]
        parts += ["", table(("Status", "When"), answers)]
    return "\n".join(parts) + "\n"


# -- settings -------------------------------------------------------------------------------
def _type_name(annotation: Any) -> str:
    import enum
    import typing

    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + ", ".join(str(a) for a in typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "one of " + ", ".join(str(member.value) for member in annotation)
    text = annotation.__name__ if isinstance(annotation, type) else repr(annotation)
    text = re.sub(r"\b(typing|pathlib|pydantic\.types|starburst\.[\w.]+)\.", "", text)
    return text.replace("NoneType", "None").replace("<class '", "").replace("'>", "")


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    value = field.default_factory() if field.default_factory else field.default
    if value is PydanticUndefined:
        return ""
    value = getattr(value, "value", value)  # an enum member: its value
    return str(value).replace(str(Path.home()), "~")


def _bounds(field: Any) -> str:
    names = {"Ge": "≥", "Gt": ">", "Le": "≤", "Lt": "<"}
    found = []
    for item in field.metadata:
        kind = type(item).__name__
        if kind in names:  # annotated_types.Ge(ge=0) and friends
            found.append(f"{names[kind]} {getattr(item, kind.lower()):g}")
    return ", ".join(found)


def settings_rows() -> Iterator[tuple[str, str, Any]]:
    """(setting, environment variable, pydantic field) of every ``Settings`` field."""
    from starburst.settings import Settings

    prefix = str(Settings.model_config.get("env_prefix", ""))
    for name, field in Settings.model_fields.items():
        yield name, f"{prefix}{name}".upper(), field


def settings_page() -> str:
    from starburst.settings import SETTINGS_GROUPS

    rows = {
        name: (
            code(name),
            code(env),
            code(_type_name(field.annotation)),
            code(_default(field)),
            cell(_bounds(field)),
            cell(field.description or ""),
        )
        for name, env, field in settings_rows()
    }
    header = ("Setting", "Environment variable", "Type", "Default", "Bounds", "Meaning")
    sections = []
    for group in SETTINGS_GROUPS:  # one table per concern, as ``Settings`` is grouped
        title = group.__name__.removesuffix("Settings")
        sections += [
            f"## {title}",
            "",
            " ".join((group.__doc__ or "").split()),
            "",
            table(header, [rows[name] for name in group.__annotations__ if name in rows]),
            "",
        ]
    return "\n".join(
        [
            "# Settings reference",
            "",
            "Generated from `starburst.settings.Settings` at every build of this site. Every "
            "`starburst` command reads them the same way: explicit flags (`--url` for database "
            "verbs), then `STARBURST_*` environment variables, then the YAML file named by "
            "`--config` or `STARBURST_CONFIG`, then these defaults. A bad value stops the start "
            "with one line per field. In the Helm chart they go under `settings:` "
            "([Helm values](helm.md)). The settings are grouped by concern, one class of "
            "`starburst.settings` each; the group does not change a setting's name.",
            "",
            *sections,
        ]
    )


# -- Helm values ----------------------------------------------------------------------------
def helm_keys(schema: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted key, its schema) of every key of the chart's values, parents before children;
    the children of ``DOCUMENTED_ELSEWHERE`` keys are left to their own pages."""
    for key, node in schema.get("properties", {}).items():
        dotted = f"{prefix}{key}"
        yield dotted, node
        if dotted not in DOCUMENTED_ELSEWHERE:
            yield from helm_keys(node, f"{dotted}.")


def values_comments(text: str) -> dict[str, str]:
    """The ``# -- ...`` comment (with its continuation lines) above each key of values.yaml."""
    comments: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            pending = [stripped[4:].strip()]
        elif stripped.startswith("#") and pending:
            pending.append(stripped[1:].strip())
        elif match := re.match(r"^(\s*)([A-Za-z_][\w-]*):", line):
            indent = len(match.group(1))
            stack = [(i, k) for i, k in stack if i < indent] + [(indent, match.group(2))]
            if pending:
                comments[".".join(k for _, k in stack)] = " ".join(pending)
            pending = []
        elif not stripped:
            pending = []
    return comments


def _lookup(values: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(values, dict) or key not in values:
            return None
        values = values[key]
    return values


def helm_page() -> str:
    import yaml

    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    values_text = (CHART / "values.yaml").read_text(encoding="utf-8")
    values = yaml.safe_load(values_text)
    comments = values_comments(values_text)
    rows = []
    for dotted, node in helm_keys(schema):
        default = _lookup(values, dotted)
        shown = "" if "properties" in node else json.dumps(default)
        meaning = (
            DOCUMENTED_ELSEWHERE.get(dotted)
            or comments.get(dotted)
            or node.get("description", "")  # the schema's words where values.yaml has none
        )
        rows.append((code(dotted), code(_schema_name(node)), code(shown), cell(meaning)))
    owned = schema["properties"]["settings"].get("description", "")
    return "\n".join(
        [
            "# Helm values reference",
            "",
            "Generated from `helm/starburst/values.schema.json` (types), `values.yaml` "
            "(defaults and the comment above each key) at every build of this site. The schema "
            "refuses a misspelt key or a wrong type at `helm install` naming the field.",
            "",
            table(("Key", "Type", "Default", "Meaning"), rows),
            "",
            "## `settings`",
            "",
            cell(owned),
            "",
        ]
    )


PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/api.md": api_page,
    "reference/settings.md": settings_page,
    "reference/helm.md": helm_page,
}


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for uri, page in PAGES.items():
        files.append(File.generated(config, uri, content=page()))
    return files


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "site-reference")
    for uri, page in PAGES.items():
        (out / uri).parent.mkdir(parents=True, exist_ok=True)
        (out / uri).write_text(page(), encoding="utf-8")
        print(out / uri)
