"""Quick benchmark scripts outside the runtime package (`python -m benchmarks.<name>`); the harness's
scenarios are the measurements of record. Dated results are logged in docs/."""
