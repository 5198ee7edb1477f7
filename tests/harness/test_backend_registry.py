"""The backend registry: a new backend is one module and one preset, found and validated with nothing else
changed; a serial measurement imports only its own backend (no Ray, no reactor runtime)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import backends
from harness.app import CONF_DIR
from harness.config import range_errors, register_configs
from harness.measure import measure
from harness.runner import backend_variant, job_spec

REPO = Path(__file__).resolve().parents[2]

TOY_MODULE = '''
"""A toy backend: the serial loop with the workers stepped last first (results gathered in index order)."""
from dataclasses import dataclass, field

from backends.base import Backend, BackendConfig, split_messages

NAME = "toy"


@dataclass
class ToyConfig(BackendConfig):
    name: str = "toy"
    label: str = "lastfirst"
    #: unused by the loop: a numeric knob with a range, for the validation
    stride: int = field(default=1, metadata={"range": {"ge": 1}})


def variant(config):
    return config["label"]


class ToyBackend(Backend):
    name = NAME

    def start(self, scenario, server):
        self.server = server
        self.roles = [scenario.make_worker(i) for i in range(scenario.num_workers)]
        self.process_of_worker = [0] * len(self.roles)

    def run(self, rounds, clock):
        n = len(self.roles)
        clock.begin()
        for _ in range(rounds):
            msgs = split_messages(self.server.scatter(), n)
            results = [None] * n
            for i in reversed(range(n)):
                results[i] = self.roles[i].step(msgs[i])
            self.server.gather(results)
            if clock.tick() is False:
                return

    def stop(self):
        for role in getattr(self, "roles", []):
            role.close()


SCHEMA = ToyConfig
BACKEND = ToyBackend
'''


@pytest.fixture
def toy_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``toy.py`` in a folder on `backends`' package path and ``conf/backend/toy.yaml`` in a copy of conf/;
    yields the conf copy. Nothing else is touched: no registry line, no schema in harness.config."""
    pkg = tmp_path / "more_backends"
    pkg.mkdir()
    (pkg / "toy.py").write_text(TOY_MODULE)
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    (conf / "backend" / "toy.yaml").write_text("defaults:\n  - toy_schema\nlabel: reversed\n")
    monkeypatch.setattr(backends, "__path__", [*backends.__path__, str(pkg)])
    try:
        register_configs()
        yield conf
    finally:
        sys.modules.pop("backends.toy", None)
        ConfigStore.instance().repo.get("backend", {}).pop("toy_schema.yaml", None)


def _compose(conf: Path, *overrides: str) -> Any:
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def _plain(cfg: Any) -> dict[str, Any]:
    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)


def _checksums(cfg: dict[str, Any]) -> list[str]:
    sent: list[dict[str, Any]] = []
    measure(job_spec(cfg), sent.append)
    return [m["checksum"] for m in sent if m["type"] == "repetition"]


def test_a_new_backend_is_one_module_and_one_preset(toy_backend: Path):
    assert "toy" in backends.backend_names()
    common = ("scenario=gym", "budget=smoke", "workers=2", "budget.rounds=3", "budget.warmup_rounds=1",
              "budget.repetitions=2")
    cfg = _compose(toy_backend, "backend=toy", *common)
    assert (cfg.backend.name, cfg.backend.label, cfg.backend.stride) == ("toy", "reversed", 1)
    plain = _plain(cfg)
    assert range_errors(plain) == []
    assert backend_variant(plain["backend"]) == "reversed"

    # the schema validates: an unknown key and a wrong type fail at composition, naming the key ...
    with pytest.raises(ConfigCompositionException) as unknown:
        _compose(toy_backend, "backend=toy", "backend.strid=2", *common)
    assert "strid" in str(unknown.value.__cause__ or unknown.value)
    with pytest.raises(ConfigCompositionException) as wrong_type:
        _compose(toy_backend, "backend=toy", "backend.stride=two", *common)
    assert "stride" in str(wrong_type.value.__cause__ or wrong_type.value)
    # ... and a value outside the range its metadata declares is named by the range check
    assert range_errors(_plain(_compose(toy_backend, "backend=toy", "backend.stride=0", *common))) == [
        "backend.stride=0: must be >= 1"]

    # it runs through the measuring child's code and reproduces the serial checksum
    toy = _checksums(plain)
    serial = _checksums(_plain(_compose(toy_backend, "backend=serial", *common)))
    assert len(toy) == 2 and toy == serial


def test_an_unknown_backend_is_named():
    with pytest.raises(ValueError, match="unknown backend 'rey'"):
        backends.backend_module("rey")


SERIAL_CHILD = """
import json, sys
from harness.measure import measure
sent = []
measure(json.loads(sys.argv[1]), sent.append)
print(json.dumps({"rows": sum(m["type"] == "repetition" for m in sent),
                  "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("ray", "reactor_backend",
                                                                                 "ray_backend", "backends"))}))
"""


def test_a_serial_measurement_imports_neither_ray_nor_the_reactor_runtime():
    """The measuring child's code for ``backend=serial`` in a fresh interpreter: the registry imports the
    serial module alone (the checks below fail if measure() imported every backend)."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["scenario=gym", "backend=serial", "budget=smoke",
                                                       "budget.rounds=2", "budget.repetitions=1"])
    spec = job_spec(_plain(cfg))
    out = subprocess.run([sys.executable, "-c", SERIAL_CHILD, json.dumps(spec)], cwd=REPO, capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["rows"] == 1
    assert report["modules"] == ["backends", "backends.base", "backends.serial"], report["modules"]


def test_the_serial_check_can_fail():
    """Importing a second backend module shows up in the same module list (so the test above can fail)."""
    code = textwrap.dedent("""
        import sys
        import backends
        backends.backend_module("reactor")
        print(sorted(m for m in sys.modules if m.split(".")[0] == "reactor_backend")[:1])
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "reactor_backend" in out.stdout
