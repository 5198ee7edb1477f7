"""``python -m harness ...`` runs jobs; ``python -m harness graph scenario=<name>`` prints a dataflow graph."""
import sys

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "graph":
        from harness.graph import main as graph_main

        sys.exit(graph_main(sys.argv[2:]))
    from harness.app import main

    main()
