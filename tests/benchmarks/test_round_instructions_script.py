"""scripts/round_instructions.py: callgrind's totals read per process, process 0's extra grouped, and (slow, where
valgrind is installed) a real count in which process 0, which runs the server, retires more per round."""
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "round_instructions.py"


def _script():
    spec = importlib.util.spec_from_file_location("round_instructions", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_totals_are_read_from_the_callgrind_file(tmp_path):
    out = tmp_path / "cg.123"
    out.write_text("# callgrind format\nversion: 1\nevents: Ir\nfn=main\n1 5\nsummary: 424242\ntotals: 424242\n")
    assert _script().totals(str(out)) == 424242
    (tmp_path / "cg.124").write_text("events: Ir\n")
    with pytest.raises(ValueError, match="no totals"):
        _script().totals(str(tmp_path / "cg.124"))


@pytest.mark.parametrize("name,group", [
    ("PyBlake2_blake2b_compress.isra.0", "checksum fold"),
    ("__pyx_pw_9scenarios_9_checksum_9join_attached", "checksum fold"),
    ("__pyx_f_15reactor_backend_6_codec_11RecordCodec_read", "result import"),
    ("__pyx_f_15reactor_backend_5_core_4Port__set", "result import"),
    ("tupledealloc", "result import"),
    ("__pyx_f_15reactor_backend_5_core_11ProcessLink_meet", "meetings"),
    ("__pyx_f_15reactor_backend_5_sync_7Barrier_c_wait_ready", "meetings"),
    ("__pyx_f_15reactor_backend_5_core_4Core__run_levels", "core"),
    ("_PyEval_EvalFrameDefault'2", "Python"),
])
def test_each_function_falls_in_one_group(name, group):
    import re

    groups = _script().GROUPS
    assert next(g for g, pattern in groups if re.search(pattern, name)).startswith(group)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_process_0_retires_more_instructions_a_round_than_the_others():
    out = subprocess.run([sys.executable, str(SCRIPT), "--workers", "2", "--rounds", "100"], capture_output=True,
                         text=True, timeout=900, check=True).stdout
    line = next(l for l in out.splitlines() if "process 0 / median other" in l)
    assert float(line.split(":")[1].split()[0]) > 1.0, out
