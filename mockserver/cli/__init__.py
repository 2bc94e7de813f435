"""The command line: `mockserver serve`, `check`, `export`, `record` and `parity`."""
