"""``python -m harness graph scenario=<name> [overrides] [--format dot|mermaid]``: the reactor program of a
scenario as a dataflow graph (the paper's automatically generated diagrams), printed as Graphviz DOT and/or
Mermaid text. Composes the same Hydra config as a run, so every override works here too.
"""
from __future__ import annotations

import argparse
import sys

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf


class _NoClock:
    def begin(self) -> None: ...

    def tick(self) -> None: ...


def build_program(overrides: list[str]):  # noqa: ANN201 - a RoundProgram
    """The `RoundProgram` a reactor run of this configuration would execute.

    The server role is built (the program holds it: its networks and environments are created), the worker
    roles are not (a worker reactor builds its role at startup, and the program does not run here)."""
    from backends.reactor import RoundProgram
    from harness.app import CONF_DIR
    from harness.config import SCENARIO_SCHEMAS, config_object
    from scenarios import make_scenario

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    values = OmegaConf.to_container(cfg.scenario, resolve=True, enum_to_str=True)
    scenario = make_scenario(config_object(SCENARIO_SCHEMAS[cfg.scenario.name], values), cfg.seed)
    return RoundProgram(scenario, scenario.make_server(), _NoClock(), rounds=1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness graph", description=__doc__)
    parser.add_argument("--format", choices=("dot", "mermaid", "both"), default="both")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. scenario=atari scenario.num_envs=4")
    args = parser.parse_args(argv)
    from reactor_backend import diagram

    graph = diagram(build_program(args.overrides))
    if args.format in ("dot", "both"):
        print(graph.dot)
    if args.format in ("mermaid", "both"):
        print(graph.mermaid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
