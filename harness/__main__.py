"""``python -m harness ...`` runs jobs; ``python -m harness graph scenario=<name>`` prints a dataflow graph;
``python -m harness compare backends=a,b,... [overrides]`` measures backends paired (`harness.compare`);
``python -m harness selftest [selftest.*=...] [overrides]`` measures what this machine can resolve
(`harness.selftest`)."""
import sys

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "graph":
        from harness.graph import main as graph_main

        sys.exit(graph_main(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "compare":
        from harness.compare import list_argument, main as compare_main

        sys.argv = [sys.argv[0], *list_argument(sys.argv[2:])]
        compare_main()
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "selftest":
        from harness.selftest import main as selftest_main

        sys.exit(selftest_main(sys.argv[2:]))
    from harness.app import main

    main()
