"""One backend label: what a result row's backend is, parsed and rendered in one place.

A row names its backend by ``backend`` (the module: ``serial``, ``reactor``, ``ray``, ``capacity``...), ``variant``
(the reactor executor, the Ray mode, or ``-``), the interpreter it ran on when that is not the harness's own
(written into the variant as ``threads ft``, ``ft``, ``threads py3.12.1``: `harness.runner.interpreter_variant`)
and, in an A/A job, which copy of a doubled backend it is (the ``copy`` column: 1, 2, ...), and the extra work
injected into it (``compare.extra_work``, `harness.child.ExtraWork`: the rows' extra ``extra_work`` share). The
report's key is the rendered label ``backend:variant[ interp][#copy][ +effect%]`` (``serial:-``,
``reactor:threads ft``, ``serial:-#2``, ``serial:-#3 +2%``). Every module that needs a part of a label (the
baseline on the same interpreter, the copy of an A/A pair, whether a resident is a copy) asks this type instead of
splitting strings.

The name a person reads is the preset a user types (``reactor``, ``ray_packed``, ``serial +2%``). A run stores the
preset each job was run with (its rows' ``metadata.preset``, `harness.metadata.job_metadata`); a report reads the
names from the run (`PresetNames.from_rows`), and only for rows that stored none (runs before presets were stored)
from today's ``conf/backend``, saying so (`PresetNames.fallback`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

#: an interpreter tag written after the variant: ``ft`` (free-threaded) or ``py<version>``
_INTERP = re.compile(r"^(ft|py\d+(?:\.\d+)*[a-z0-9+]*)$")
#: the injected effect at the end of a rendered label: `` +2%``, `` +0.5%``
_EFFECT = re.compile(r"^(?P<head>.*) \+(?P<pct>\d+(?:\.\d+)?(?:e-?\d+)?)%$")


def effect_text(share: float) -> str:
    """An injected share of extra work as a reader says it: 0.02 -> ``+2%``."""
    return f"+{share * 100:g}%"


def _share(value: Any) -> float:
    """A share of extra work from a row's extra (``extra_work``), 0.0 when absent or not a number."""
    try:
        share = float(value)
    except (TypeError, ValueError):
        return 0.0
    return round(share, 6) if math.isfinite(share) and share > 0 else 0.0


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
        extra_work: the share of extra work injected into this resident (``compare.extra_work``; 0: none).
    """

    name: str
    variant: str = "-"
    interpreter: str = ""
    copy: int = 1
    extra_work: float = 0.0

    @classmethod
    def from_row(cls, backend: Any, variant: Any, copy: Any = 1, extra_work: Any = 0.0) -> "BackendLabel":
        """The label of a results row from its ``backend``, ``variant`` (interpreter tag included), ``copy`` and
        the ``extra_work`` share its extra records (absent: none)."""
        base, interp = _split_variant("-" if _blank(variant) else str(variant))
        try:
            n = int(float(copy))
        except (TypeError, ValueError):
            n = 1
        return cls(str(backend), base, interp, n if n >= 1 else 1, _share(extra_work))

    @classmethod
    def parse(cls, label: str) -> "BackendLabel":
        """``reactor:threads ft#2`` -> BackendLabel('reactor', 'threads', 'ft', 2); ``serial:-#3 +2%`` ->
        BackendLabel('serial', '-', '', 3, 0.02) (inverse of `render`)."""
        text, copy, share = str(label), 1, 0.0
        effect = _EFFECT.match(text)
        if effect:
            text, share = effect.group("head"), float(effect.group("pct")) / 100
        head, hash_, tail = text.rpartition("#")
        if hash_ and tail.isdigit():
            text, copy = head, int(tail)
        name, _, variant = text.partition(":")
        return cls.from_row(name, variant, copy, share)

    def row_variant(self) -> str:
        """The ``variant`` column's text (interpreter tag included, as `harness.runner` writes it)."""
        if not self.interpreter:
            return self.variant
        return self.interpreter if self.variant == "-" else f"{self.variant} {self.interpreter}"

    def render(self) -> str:
        """The report's key: ``backend:variant[ interp][#copy][ +effect%]``."""
        text = f"{self.name}:{self.row_variant()}"
        text = text if self.copy == 1 else f"{text}#{self.copy}"
        return f"{text} {effect_text(self.extra_work)}" if self.extra_work else text

    def __str__(self) -> str:
        return self.render()

    def preset_name(self, folder: Optional[Path] = None, names: Optional["PresetNames"] = None) -> str:
        """The name a user types for this backend: the preset (``reactor``, ``ray_packed``, ``serial``), then
        ``@<interpreter>`` as `harness compare` takes it (``reactor_threads@ft``), ``#<copy>`` for an A/A job's
        later copy (``serial#2``) and, for a copy with injected work, its effect instead (``serial +2%``). The
        preset comes from ``names`` (a run's stored names, `PresetNames`) when given, else from the presets in
        ``folder`` (`preset_table`: today's ``conf/backend``, what a job being run now uses; also for a backend
        that ``names``' run did not measure). A (backend, variant) that no preset produces keeps
        ``backend:variant``."""
        if names is not None and names.holds(self.name, self.variant):
            preset = names.get(self.name, self.variant)
        else:  # a job run now, or a backend the run did not measure (the headline's paper-layout Ray)
            preset = preset_table(folder).get((self.name, self.variant))
        text = preset if preset is not None else f"{self.name}:{self.variant}"
        if self.interpreter:
            text += f"@{self.interpreter}" if preset is not None else f" {self.interpreter}"
        if self.extra_work:
            return f"{text} {effect_text(self.extra_work)}"
        return text if self.copy == 1 else f"{text}#{self.copy}"

    @property
    def free_threaded(self) -> bool:
        return self.interpreter == "ft"

    @property
    def injected(self) -> bool:
        """Whether extra work was injected into this resident (a known effect, for the self-test)."""
        return self.extra_work > 0

    @property
    def is_copy(self) -> bool:
        """An A/A copy (``serial#2``) or a resident with injected work (``serial +2%``): it measures the harness,
        never a backend a user would run instead, so it is never an alternative and is drawn apart."""
        return self.copy > 1 or self.injected

    def first_copy(self) -> "BackendLabel":
        """The same backend as the first resident of its kind, without injected work (what a copy is compared
        with)."""
        return replace(self, copy=1, extra_work=0.0)

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


def label_of(backend: Any, variant: Any, copy: Any = 1, extra_work: Any = 0.0) -> str:
    """The rendered label of a results row (`BackendLabel.from_row(...).render()`)."""
    return BackendLabel.from_row(backend, variant, copy, extra_work).render()


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
    spelled-out alias). What a job run now is named by; a report names a run's backends by the names the run
    stored (`PresetNames`), and reads this table only for rows that stored none, saying so. A preset that
    cannot be composed raises (the presets are this checkout's own files: a broken one is a bug to see)."""
    folder = Path(folder) if folder is not None else PRESET_DIR
    if folder in _PRESETS:
        return _PRESETS[folder]
    table: dict[tuple[str, str], str] = {}
    for path in sorted(folder.glob("*.yaml"), key=lambda p: (len(p.stem), p.stem)):
        row = preset_row(path)
        if row is not None:
            table.setdefault(row, path.stem)
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


def _shortest(names: set[str]) -> str:
    return min(names, key=lambda n: (len(n), n))


@dataclass(frozen=True)
class PresetNames:
    """The preset names of one run's backends: (backend, variant) -> the preset its jobs were run with, as the
    rows stored it (``metadata.preset``). Where the rows of a (backend, variant) stored none (a run from before
    presets were stored), its name is today's (`preset_table`) and the pair is in ``fallback``; where no preset
    of today gives it either, it has no name (``backend:variant`` is shown) and is in ``fallback`` too."""

    table: tuple[tuple[tuple[str, str], str], ...] = ()
    fallback: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_rows(cls, rows: Any, folder: Optional[Path] = None) -> "PresetNames":
        """The names stored in ``rows`` (a frame with ``backend``, ``variant`` and ``meta`` (decoded metadata)
        or ``metadata`` (JSON text) columns). Two presets stored for one (backend, variant) (aliases): the
        shorter. Today's ``folder`` (default ``conf/backend``) is read only where a (backend, variant) has no
        row with a stored name."""
        import json

        stored: dict[tuple[str, str], set[str]] = {}
        missing: set[tuple[str, str]] = set()
        if rows is not None and len(rows):
            metas = rows["meta"] if "meta" in rows else rows.get("metadata", [None] * len(rows))
            seen: set[tuple[str, str, str]] = set()
            for backend, variant, meta in zip(rows["backend"], rows["variant"], metas):
                if isinstance(meta, str):
                    meta = json.loads(meta) if meta.strip() else {}
                preset = meta.get("preset") if isinstance(meta, dict) else None
                seen.add((str(backend), "-" if _blank(variant) else str(variant), str(preset) if preset else ""))
            for backend, variant, preset in seen:
                label = BackendLabel.from_row(backend, variant)
                key = (label.name, label.variant)
                if preset:
                    stored.setdefault(key, set()).add(preset)
                else:
                    missing.add(key)
        table = {key: _shortest(names) for key, names in stored.items()}
        fallback = sorted(missing - set(table))
        if fallback:
            today = preset_table(folder)
            table.update({key: today[key] for key in fallback if key in today})
        return cls(tuple(sorted(table.items())), tuple(fallback))

    def get(self, name: str, variant: str) -> Optional[str]:
        return dict(self.table).get((name, variant))

    def holds(self, name: str, variant: str) -> bool:
        """Whether the run has rows of this (backend, variant): named by the run, or said to fall back."""
        return (name, variant) in dict(self.table) or (name, variant) in self.fallback

    def fallback_labels(self) -> list[str]:
        """The ``backend:variant`` of every pair named from today's presets (or not at all), sorted."""
        return [f"{name}:{variant}" for name, variant in self.fallback]
