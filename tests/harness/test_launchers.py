"""Sweeps across machines: hydra-submitit-launcher, tried here in its local mode; the Slurm preset's sbatch."""
from __future__ import annotations

import math

import pandas as pd
import submitit
from hydra import compose, initialize_config_dir
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
from omegaconf import OmegaConf

from harness.app import CONF_DIR
from tests.conftest import read_rows, run_cli

#: two jobs of different backends (each job's own config crosses submitit's pickling), two repetitions each
SWEEP = ("scenario=gym", "backend=serial,vector", "budget=smoke", "budget.repetitions=2", "seed=1")
SAME = ["scenario", "backend", "variant", "workers", "num_envs", "env_id", "seed", "repetition", "units", "unit",
        "rounds", "checksum", "status", "params"]


def _rows(sweep_dir) -> pd.DataFrame:
    jobs = sorted(d for d in sweep_dir.iterdir() if d.is_dir() and not d.name.startswith("."))
    return pd.concat([read_rows(j).assign(job=j.name) for j in jobs], ignore_index=True)


def test_submitit_local_sweep_yields_the_rows_of_the_basic_launcher(tmp_path):
    basic = run_cli(*SWEEP, run_dir=tmp_path / "basic", multirun=True)
    assert basic.returncode == 0, basic.stderr
    local = run_cli(*SWEEP, "hydra/launcher=submitit_local", run_dir=tmp_path / "submitit", multirun=True)
    assert local.returncode == 0, local.stderr
    assert list((tmp_path / "submitit" / ".submitit").iterdir())  # the jobs really went through submitit
    a, b = _rows(tmp_path / "basic"), _rows(tmp_path / "submitit")
    assert len(a) == 4 and set(a.status) == {"ok"} and a.job.nunique() == 2
    pd.testing.assert_frame_equal(a[SAME + ["job"]], b[SAME + ["job"]])


def test_slurm_preset_asks_for_whole_nodes_and_outlasts_the_harness_timeout(monkeypatch, tmp_path):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["hydra/launcher=slurm", "budget=paper"],
                      return_hydra_config=True)
    launcher = cfg.hydra.launcher
    minutes = math.ceil(cfg.budget.timeout_s / 60) + 10  # the harness's own timeout ends a slow job first
    assert launcher.timeout_min == minutes
    # what the plugin does with these parameters (SubmititLauncher.launch), up to the sbatch file; there is no
    # Slurm here, so only submitit's check for `srun` on the PATH is answered
    monkeypatch.setattr(submitit.SlurmExecutor, "affinity", classmethod(lambda cls: 2))
    executor = submitit.AutoExecutor(cluster="slurm", folder=str(tmp_path), slurm_max_num_timeout=0)
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    params = {k: launcher[k] for k in launcher if k not in ("_target_", "submitit_folder", "max_num_timeout", "name")}
    executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items()})
    sbatch = executor._executor._make_submission_file_text("python -m harness", "uid")
    for line in ("#SBATCH --exclusive", "#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=1", f"#SBATCH --time={minutes}"):
        assert line in sbatch.splitlines(), sbatch
