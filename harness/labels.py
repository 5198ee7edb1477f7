"""One backend label: what a result row's backend is, parsed and rendered in one place.

A row names its backend by ``backend`` (the module: ``serial``, ``reactor``, ``ray``, ``capacity``...), ``variant``
(the reactor executor, the Ray mode, or ``-``), the interpreter it ran on when that is not the harness's own
(written into the variant as ``threads ft``, ``ft``, ``threads py3.12.1``: `harness.runner.interpreter_variant`)
and, in an A/A job, which copy of a doubled backend it is (the ``copy`` column: 1, 2, ...). The report's key is
the rendered label ``backend:variant[ interp][#copy]`` (``serial:-``, ``reactor:threads ft``, ``serial:-#2``).
Every module that needs a part of a label (the baseline on the same interpreter, the copy of an A/A pair)
asks this type instead of splitting strings.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

#: an interpreter tag written after the variant: ``ft`` (free-threaded) or ``py<version>``
_INTERP = re.compile(r"^(ft|py\d+(?:\.\d+)*[a-z0-9+]*)$")


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() in ("", "-")


@dataclass(frozen=True)
class BackendLabel:
    """A backend as results and reports name it.

    Args:
        name: the backend module (``serial``, ``reactor``, ``capacity``, ``ray``...).
        variant: its variant (``processes``, ``threads``, ``actors``...) or ``-``.
        interpreter: ``""`` for the harness's interpreter, ``ft`` or ``py3.12.1`` for another.
        copy: 1 for a backend's first resident; 2, 3... for the identical copies of an A/A job.
    """

    name: str
    variant: str = "-"
    interpreter: str = ""
    copy: int = 1

    @classmethod
    def from_row(cls, backend: Any, variant: Any, copy: Any = 1) -> "BackendLabel":
        """The label of a results row from its ``backend``, ``variant`` (interpreter tag included) and ``copy``."""
        base, interp = _split_variant("-" if _blank(variant) else str(variant))
        try:
            n = int(float(copy))
        except (TypeError, ValueError):
            n = 1
        return cls(str(backend), base, interp, n if n >= 1 else 1)

    @classmethod
    def parse(cls, label: str) -> "BackendLabel":
        """``reactor:threads ft#2`` -> BackendLabel('reactor', 'threads', 'ft', 2) (inverse of `render`)."""
        text, copy = str(label), 1
        head, hash_, tail = text.rpartition("#")
        if hash_ and tail.isdigit():
            text, copy = head, int(tail)
        name, _, variant = text.partition(":")
        return cls.from_row(name, variant, copy)

    def row_variant(self) -> str:
        """The ``variant`` column's text (interpreter tag included, as `harness.runner` writes it)."""
        if not self.interpreter:
            return self.variant
        return self.interpreter if self.variant == "-" else f"{self.variant} {self.interpreter}"

    def render(self) -> str:
        """The report's key: ``backend:variant[ interp][#copy]``."""
        text = f"{self.name}:{self.row_variant()}"
        return text if self.copy == 1 else f"{text}#{self.copy}"

    def __str__(self) -> str:
        return self.render()

    def preset_name(self, folder: Optional[Path] = None) -> str:
        """The name a user types for this backend: the preset (``reactor``, ``ray_packed``, ``serial``;
        `preset_table`), then ``@<interpreter>`` as `harness compare` takes it (``reactor_threads@ft``) and
        ``#<copy>`` for an A/A job's later copy (``serial#2``). A (backend, variant) that no preset produces
        keeps ``backend:variant``."""
        preset = preset_table(folder).get((self.name, self.variant))
        text = preset if preset is not None else f"{self.name}:{self.variant}"
        if self.interpreter:
            text += f"@{self.interpreter}" if preset is not None else f" {self.interpreter}"
        return text if self.copy == 1 else f"{text}#{self.copy}"

    @property
    def free_threaded(self) -> bool:
        return self.interpreter == "ft"

    def first_copy(self) -> "BackendLabel":
        """The same backend as the first resident of its kind (what an A/A copy is compared with)."""
        return replace(self, copy=1)

    def on_default_interpreter(self) -> "BackendLabel":
        return replace(self, interpreter="")

    def serial_baseline(self) -> "BackendLabel":
        """Serial on the same interpreter (and first copy): the baseline a parallel backend is read against."""
        return BackendLabel("serial", "-", self.interpreter, 1)


def _split_variant(variant: str) -> tuple[str, str]:
    """``threads ft`` -> (``threads``, ``ft``); ``ft`` -> (``-``, ``ft``); ``actors`` -> (``actors``, ``"")."""
    if _INTERP.match(variant):
        return "-", variant
    base, sep, tag = variant.rpartition(" ")
    if sep and _INTERP.match(tag):
        return base or "-", tag
    return variant, ""


def label_of(backend: Any, variant: Any, copy: Any = 1) -> str:
    """The rendered label of a results row (`BackendLabel.from_row(...).render()`)."""
    return BackendLabel.from_row(backend, variant, copy).render()


# ------------------------------------------------------------------------------------------ preset names
# Users type presets (``backend=reactor_threads``, ``backends=serial,ray_packed``); rows record what the preset
# resolved to (``reactor``, ``threads``). The table between the two is derived, never written down: each
# ``conf/backend/<preset>.yaml`` names its schema (``<backend>_schema``) and sets some fields; the backend's
# own ``variant`` function (`backends.backend_variant`) turns the composed values into the row's variant.

#: the presets' folder (``conf/backend``)
PRESET_DIR = Path(__file__).resolve().parents[1] / "conf" / "backend"

_PRESETS: dict[Path, dict[tuple[str, str], str]] = {}


def preset_table(folder: Optional[Path] = None) -> dict[tuple[str, str], str]:
    """(backend, variant) -> the preset that produces it, from every ``conf/backend/*.yaml`` (cached per
    folder). Where two presets give one (backend, variant), the shorter name wins (``reactor`` over a
    spelled-out alias). Empty when the presets cannot be read (the report then shows ``backend:variant``)."""
    folder = Path(folder) if folder is not None else PRESET_DIR
    if folder in _PRESETS:
        return _PRESETS[folder]
    table: dict[tuple[str, str], str] = {}
    try:
        for path in sorted(folder.glob("*.yaml"), key=lambda p: (len(p.stem), p.stem)):
            row = preset_row(path)
            if row is not None:
                table.setdefault(row, path.stem)
    except Exception:  # noqa: BLE001 - a report must render without the presets (another checkout's rows)
        table = {}
    _PRESETS[folder] = table
    return table


def preset_row(path: Path) -> Optional[tuple[str, str]]:
    """(backend, variant) that the preset file ``path`` produces: its schema's defaults, the file's values, the
    backend's own ``variant`` (`backends.backend_variant`); None for a file that names no backend schema."""
    import yaml
    from omegaconf import OmegaConf

    from backends import backend_schema, backend_variant

    values = yaml.safe_load(Path(path).read_text()) or {}
    schemas = [d for d in values.pop("defaults", []) or [] if isinstance(d, str) and d.endswith("_schema")]
    if not schemas:
        return None
    composed = OmegaConf.merge(OmegaConf.structured(backend_schema(schemas[0][: -len("_schema")])), values)
    config = OmegaConf.to_container(composed, enum_to_str=True)
    return str(config["name"]), backend_variant(config)


def preset_names(folder: Optional[Path] = None) -> list[str]:
    """Every preset a user can type (``conf/backend/*.yaml``), sorted."""
    folder = Path(folder) if folder is not None else PRESET_DIR
    return sorted(p.stem for p in folder.glob("*.yaml"))


def preset_name(label: str) -> str:
    """A rendered label (``reactor:threads ft``) as the preset a user types (``reactor_threads@ft``)."""
    return BackendLabel.parse(label).preset_name()
